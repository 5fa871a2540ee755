// The family descriptor (include/interopbench/family.hpp): a tiny family added through it
// reaches the registry, the built-in profiles, the options, the pre-flight and the annotation
// with nothing else changed; the built-in list follows the folder convention.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "families/builtin.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/family.hpp"
#include "interopbench/profile.hpp"

using namespace interopbench;
namespace fs = std::filesystem;

namespace {

/// The smallest real scenario: counts calls, measures nothing but a constant.
class TinyScenario : public Scenario {
public:
    explicit TinyScenario(double value) : m_value(value) {
        m_info.id = "tiny_echo";
        m_info.family = "tiny";
        m_info.summary = "a test family's scenario";
        m_info.axes = {choice_axis("mode", "which mode", {"a", "b"})};
        m_info.metrics = {{"value", "1", Better::higher, "a constant"}};
        m_info.needs_gpu = false;
        m_info.counting = "one per sample";
    }
    const ScenarioInfo& info() const override { return m_info; }
    std::optional<std::string> unsupported(const Machine&, const Params&) const override { return std::nullopt; }
    std::unique_ptr<Case> prepare(const CaseContext&, const Params&) const override {
        struct C : Case {
            double v;
            explicit C(double x) : v(x) {}
            Sample measure() override { return {v}; }
        };
        return std::make_unique<C>(m_value);
    }

private:
    double m_value; ///< the family's option, given to the scenario when the registry is built
    ScenarioInfo m_info;
};

struct Calls {
    std::vector<std::string> preflight_keys;
    int annotated = 0;
};

Family tiny_family(Calls& calls) {
    return {
        .name = "tiny",
        .summary = "a test family",
        .add_scenarios =
            [](Registry& r, const FamilyOptions& options, std::vector<std::string>&) {
                r.add(std::make_unique<TinyScenario>(options.number("tiny-value").value_or(1.0)));
            },
        .options = {{"tiny-value", OptionKind::number, "the value the tiny scenario reports"}},
        .preflight =
            [&calls](const RunSettings&, const std::vector<Config>& configs) {
                for (const Config& c : configs) calls.preflight_keys.push_back(c.key());
            },
        .annotate =
            [&calls](std::vector<Result>& results) {
                ++calls.annotated;
                for (Result& r : results)
                    if (r.scenario == "tiny_echo") r.details["annotated"] = true;
            },
        .profiles = {{"quick", R"([{"pattern": "tiny_echo", "axes": {"mode": ["b"]}}])"}},
    };
}

} // namespace

TEST_SUITE("family") {

TEST_CASE("a tiny family added through its descriptor reaches the registry, profiles, options and hooks") {
    Calls calls;
    const Families families({builtin_families().all().front(), tiny_family(calls)});
    std::vector<std::string> warnings;
    FamilyOptions options;
    options.set_number("tiny-value", 42);
    const Registry r = families.registry(options, warnings);
    REQUIRE(r.find("tiny_echo"));
    CHECK(r.find("host_memcpy")); // the first built-in family is still there, before it
    CHECK(r.all().back()->info().id == "tiny_echo");

    // The built-in quick profile now runs its entry, after the copy family's.
    const RunPlan plan = load_profile("quick", r);
    REQUIRE(!plan.entries.empty());
    CHECK(plan.entries.back().pattern == "tiny_echo");
    CHECK(plan.entries.back().axes.at("mode") == std::vector<std::string>{"b"});

    // Its option is declared once, with the copy family's none.
    REQUIRE(families.options().size() == 1);
    CHECK(families.options()[0].name == "tiny-value");

    // The pre-flight sees its own configurations only; the annotation runs after the run.
    RunPlan both;
    both.entries = {{"tiny_echo", {}}, {"host_memcpy", {{"size", {"4K"}}}}};
    const Machine no_gpu;
    const auto configs = expand_plan(r, both, no_gpu);
    RunSettings s;
    s.warmup = 0;
    s.min_samples = 1;
    s.max_samples = 2;
    s.options = options;
    families.preflight(s, configs);
    CHECK(calls.preflight_keys == std::vector<std::string>{"tiny_echo/mode=a", "tiny_echo/mode=b"});
    Runner runner(no_gpu, s);
    std::vector<Result> results{runner.run_one(configs.front())};
    REQUIRE(results[0].status == Status::ok);
    CHECK(results[0].metrics[0].stats.median == 42); // the option reached the case
    families.annotate(results);
    CHECK(calls.annotated == 1);
    CHECK(results[0].details.value("annotated", false));
}

TEST_CASE("the list is checked: duplicates, no profile statement, options declared two ways") {
    Calls calls;
    CHECK_THROWS_AS(Families({tiny_family(calls), tiny_family(calls)}), std::logic_error);
    Family silent = tiny_family(calls);
    silent.profiles.clear();
    CHECK_THROWS_AS(Families({silent}), std::logic_error);
    silent.no_profiles = "it adds nothing to the built-in profiles";
    CHECK_NOTHROW(Families({silent}));
    Family bad_entries = tiny_family(calls);
    bad_entries.profiles = {{"quick", "{not json"}};
    CHECK_THROWS_AS(Families({bad_entries}), std::logic_error);
    Family other = tiny_family(calls);
    other.name = "tiny2";
    other.options[0].help = "another meaning";
    CHECK_THROWS_AS(Families({tiny_family(calls), other}), std::logic_error);
    other.options[0] = tiny_family(calls).options[0]; // declared alike: shared, listed once
    CHECK(Families({tiny_family(calls), other}).options().size() == 1);
}

TEST_CASE("the built-in list: a folder per family, each scenario in its family, every family in a profile or saying why not") {
    const Families& families = builtin_families();
    std::set<std::string> listed, folders;
    for (const Family& f : families.all()) listed.insert(f.name);
    for (const auto& e : fs::directory_iterator(fs::path(INTEROPBENCH_SOURCE_DIR) / "src" / "families"))
        if (e.is_directory()) folders.insert(e.path().filename().string());
    CHECK(listed == folders);
    for (const Family& f : families.all()) {
        CAPTURE(f.name);
        if (f.name == "plugin") continue; // plugins are found at run time
        Registry r;
        std::vector<std::string> warnings;
        f.add_scenarios(r, FamilyOptions{}, warnings);
        CHECK_FALSE(r.all().empty());
        for (const auto& s : r.all()) CHECK(s->info().family == f.name);
        CHECK_FALSE(f.profiles.empty());
    }
    // The storage site's options are declared by both families that keep files there, once.
    const auto& options = families.options();
    CHECK(std::count_if(options.begin(), options.end(), [](const FamilyOption& o) { return o.name == "storage-dir"; }) == 1);
}

} // TEST_SUITE
