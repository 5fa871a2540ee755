// placeholder: filled in by its issue
namespace interopbench {}
