#include <doctest/doctest.h>

#include <set>

#include "families/builtin.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/registry.hpp"

using namespace interopbench;

TEST_CASE("built-in registry invariants") {
    const Registry r = builtin_registry();
    REQUIRE(!r.all().empty());
    std::set<std::string> ids;
    for (const auto& s : r.all()) {
        const auto& info = s->info();
        CAPTURE(info.id);
        CHECK(ids.insert(info.id).second);                  // unique ids
        CHECK(!info.family.empty());
        CHECK(!info.summary.empty());
        CHECK(!info.counting.empty());
        REQUIRE(!info.metrics.empty());
        std::set<std::string> axis_names, metric_names;
        for (const auto& a : info.axes) {
            CAPTURE(a.name);
            CHECK(axis_names.insert(a.name).second);
            CHECK(!a.help.empty());
            if (a.kind != AxisKind::device && a.kind != AxisKind::device_pair) CHECK(!a.defaults.empty());
            if (a.kind == AxisKind::choice) {
                CHECK(!a.choices.empty());
                for (const auto& d : a.defaults)
                    CHECK(std::find(a.choices.begin(), a.choices.end(), d) != a.choices.end());
            }
        }
        for (const auto& m : info.metrics) {
            CAPTURE(m.name);
            CHECK(metric_names.insert(m.name).second);
            CHECK(!m.unit.empty());
        }
    }
    CHECK(r.find("host_memcpy") != nullptr);
    CHECK(r.find("h2d_copy") != nullptr);
}

TEST_CASE("selection by glob, with suggestions for unknown names") {
    const Registry r = builtin_registry();
    const auto sel = r.select("h2d*,d2h_copy,h2d_copy");
    REQUIRE(sel.size() == 2);
    CHECK(sel[0]->info().id == "h2d_copy");
    try {
        r.select("h2d_cpy");
        FAIL("accepted");
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()) == "unknown scenario 'h2d_cpy'");
        CHECK(e.hint().find("h2d_copy") != std::string::npos);
    }
}

TEST_CASE("scenario helpers: choice_axis, device_axis") {
    const Axis a = choice_axis("mode", "which GPU drives", {"write", "read"});
    CHECK(a.name == "mode");
    CHECK(a.kind == AxisKind::choice);
    CHECK(a.choices == std::vector<std::string>{"write", "read"});
    CHECK(a.defaults == a.choices);
    CHECK(device_axis().name == "device");
    CHECK(device_axis().kind == AxisKind::device);
}
