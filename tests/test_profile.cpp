// placeholder: filled in by its issue
#include <doctest/doctest.h>
