// Profiles: built-ins, resolution of `extends`, overrides, hashes and every bad input.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "families/builtin.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/profile.hpp"

using namespace interopbench;
using nlohmann::json;

namespace {

class ProfileTestScenario final : public Scenario {
public:
    explicit ProfileTestScenario(ScenarioInfo info) : m_info(std::move(info)) {}
    const ScenarioInfo& info() const override { return m_info; }
    std::optional<std::string> unsupported(const Machine&, const Params&) const override { return std::nullopt; }
    std::unique_ptr<Case> prepare(const CaseContext&, const Params&) const override {
        throw ConfigError("not measurable");
    }

private:
    ScenarioInfo m_info;
};

// Three scenarios shaped like the real ones: a copy with size, memory kind and device;
// a peer copy; a latency without a size axis.
Registry fake_registry() {
    Registry r;
    const Axis size{"size", "bytes", AxisKind::size, {"1M"}, {}};
    const Axis device{"device", "GPU", AxisKind::device, {}, {}};
    r.add(std::make_unique<ProfileTestScenario>(ScenarioInfo{
        "h2d_copy", "copy", "h2d",
        {size, {"host_mem", "kind", AxisKind::choice, {"pinned"}, {"pageable", "pinned"}}, device},
        {{"bandwidth", "B/s", Better::higher, ""}}}));
    r.add(std::make_unique<ProfileTestScenario>(ScenarioInfo{
        "peer_copy", "peer", "peer", {{"pair", "pair", AxisKind::device_pair, {}, {}}, size},
        {{"bandwidth", "B/s", Better::higher, ""}}}));
    r.add(std::make_unique<ProfileTestScenario>(ScenarioInfo{
        "latency", "peer", "latency", {{"target", "where", AxisKind::choice, {"local"}, {"local", "host"}}, device},
        {{"latency", "s", Better::lower, ""}}}));
    return r;
}

// Writes profile files into a fresh directory for one test.
struct ProfileDir {
    std::filesystem::path dir;
    ProfileDir() {
        static int counter = 0;
        dir = std::filesystem::temp_directory_path() / fmt::format("interopbench-profile-test-{}-{}", getpid(), counter++);
        std::filesystem::create_directories(dir);
    }
    ~ProfileDir() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    std::string write(const std::string& name, const std::string& text) const {
        std::ofstream(dir / name) << text;
        return (dir / name).string();
    }
};

// The UsageError text of `f`, or "" when it does not throw one.
template <class F>
std::string usage_error(F&& f) {
    try {
        f();
    } catch (const UsageError& e) {
        return std::string(e.what()) + " | hint: " + e.hint();
    }
    return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

} // namespace

TEST_SUITE("profile") {

TEST_CASE("built-in profiles: quick, ci, full, quick is the default") {
    CHECK(builtin_profile_names() == std::vector<std::string>{"quick", "ci", "full"});
    CHECK(default_profile_name() == "quick");
    for (const auto& name : builtin_profile_names()) {
        CAPTURE(name);
        const auto resolved = resolve_profile(name, builtin_registry());
        CHECK(resolved["name"] == name);
        CHECK_FALSE(resolved["description"].get<std::string>().empty());
        CHECK_FALSE(resolved["scenarios"].empty());
        RunSettings s;
        s.apply_json(resolved["settings"], name);
        CHECK_NOTHROW(s.validate());
    }
    // ci gates: enough samples for stable medians.
    RunSettings ci;
    ci.apply_json(resolve_profile("ci", builtin_registry())["settings"], "ci");
    CHECK(ci.min_samples >= 20);
}

TEST_CASE("built-in profiles name only scenarios and axes of the built-in registry") {
    const Registry registry = builtin_registry();
    for (const auto& name : builtin_profile_names()) {
        CAPTURE(name);
        const RunPlan plan = load_profile(name, registry);
        CHECK(plan.profile == name);
        CHECK(plan.profile_hash.size() == 16);
        Machine two_gpus;
        two_gpus.selected = {0, 1};
        CHECK_FALSE(expand_plan(registry, plan, two_gpus).empty());
    }
    // quick covers every scenario family.
    std::set<std::string> families, covered;
    for (const auto& s : registry.all()) families.insert(s->info().family);
    for (const auto& e : load_profile("quick", registry).entries)
        for (const auto* s : registry.select(e.pattern)) covered.insert(s->info().family);
    CHECK(covered == families);
}

TEST_CASE("a profile file becomes a plan: settings over the defaults, entries in order") {
    ProfileDir d;
    const auto path = d.write("mine.json", R"({
        "name": "mine", "description": "two entries",
        "settings": {"min_samples": 25, "noise": 0.01},
        "scenarios": [{"pattern": "h2d_copy", "axes": {"size": ["64M", "1G"], "host_mem": ["pinned"]}},
                      {"pattern": "latency"}]})");
    const auto plan = load_profile(path, fake_registry());
    CHECK(plan.profile == "mine");
    CHECK(plan.settings.min_samples == 25);
    CHECK(plan.settings.noise == doctest::Approx(0.01));
    CHECK(plan.settings.warmup == RunSettings{}.warmup);
    REQUIRE(plan.entries.size() == 2);
    CHECK(plan.entries[0].pattern == "h2d_copy");
    CHECK(plan.entries[0].axes.at("size") == std::vector<std::string>{"64M", "1G"});
    CHECK(plan.entries[1].axes.empty());
    // The resolved document holds every setting and the entries.
    CHECK(plan.profile_resolved["settings"]["min_samples"] == 25);
    CHECK(plan.profile_resolved["settings"].contains("max_time_s"));
    CHECK(plan.profile_resolved["scenarios"].size() == 2);
    CHECK(plan.profile_resolved["sources"][0].get<std::string>().find("mine.json") != std::string::npos);
    // Without a name the file's stem names it.
    const auto unnamed = d.write("stem_name.json", R"({"scenarios": [{"pattern": "latency"}]})");
    CHECK(load_profile(unnamed, fake_registry()).profile == "stem_name");
}

TEST_CASE("extends: settings merge key by key, scenarios are inherited or replaced") {
    ProfileDir d;
    d.write("parent.json", R"({"description": "parent", "extends": "ci",
                               "settings": {"warmup": 7, "noise": 0.02},
                               "scenarios": [{"pattern": "h2d_copy", "axes": {"size": ["1M"]}}]})");
    const auto child = d.write("child.json", R"({"name": "child", "extends": "parent.json",
                                                 "settings": {"min_samples": 30}})");
    const auto resolved = resolve_profile(child, builtin_registry());
    CHECK(resolved["name"] == "child");
    CHECK(resolved["description"] == "parent");
    CHECK(resolved["settings"]["warmup"] == 7);
    CHECK(resolved["settings"]["noise"] == 0.02);
    CHECK(resolved["settings"]["min_samples"] == 30);
    // max_samples comes from ci, two levels up.
    CHECK(resolved["settings"]["max_samples"] == resolve_profile("ci", builtin_registry())["settings"]["max_samples"]);
    REQUIRE(resolved["scenarios"].size() == 1);
    CHECK(resolved["scenarios"][0]["pattern"] == "h2d_copy");
    CHECK(resolved["sources"].size() == 3);

    const auto replaced = d.write("replaced.json", R"({"extends": "parent.json", "scenarios": [{"pattern": "latency"}]})");
    const auto plan = load_profile(replaced, fake_registry());
    REQUIRE(plan.entries.size() == 1);
    CHECK(plan.entries[0].pattern == "latency");
    CHECK(plan.settings.warmup == 7);
}

TEST_CASE("command-line overrides: axes in every entry that has them, then a new hash") {
    const Registry registry = fake_registry();
    ProfileDir d;
    const auto path = d.write("p.json", R"({"scenarios": [{"pattern": "h2d_copy", "axes": {"size": ["1G"]}},
                                                            {"pattern": "peer_copy"}, {"pattern": "latency"}]})");
    auto plan = load_profile(path, registry);
    const std::string before = plan.profile_hash;
    override_axis(plan, registry, "size", {"4K,8K"});
    CHECK(plan.entries[0].axes.at("size") == std::vector<std::string>{"4K,8K"});
    CHECK(plan.entries[1].axes.at("size") == std::vector<std::string>{"4K,8K"});
    CHECK(plan.entries[2].axes.count("size") == 0); // latency has no size axis
    override_axis(plan, registry, "host_mem", {"pageable"});
    CHECK(plan.entries[0].axes.at("host_mem") == std::vector<std::string>{"pageable"});
    CHECK(plan.entries[1].axes.count("host_mem") == 0);
    CHECK(contains(usage_error([&] { override_axis(plan, registry, "colour", {"red"}); }), "colour"));
    record_profile(plan);
    CHECK(plan.profile_hash != before);
    CHECK(plan.profile_resolved["scenarios"][0]["axes"]["size"][0] == "4K,8K");
    plan.settings.min_samples = 40;
    const std::string with_axes = plan.profile_hash;
    record_profile(plan);
    CHECK(plan.profile_hash != with_axes);
    CHECK(plan.profile_resolved["settings"]["min_samples"] == 40);
}

TEST_CASE("the hash is stable and covers only what runs") {
    const json a = {{"name", "a"}, {"description", "x"}, {"settings", {{"warmup", 1}, {"noise", 0.01}}},
                    {"scenarios", json::array({{{"pattern", "h2d_copy"}, {"axes", json::object()}}})}};
    json b = a;
    b["name"] = "b";
    b["description"] = "another text";
    CHECK(profile_hash(a) == profile_hash(b));
    b["settings"]["warmup"] = 2;
    CHECK(profile_hash(a) != profile_hash(b));
    // Key order in the document does not matter (canonical dump), and the value is fixed:
    // FNV-1a 64 of {"scenarios":[{"axes":{},"pattern":"h2d_copy"}],"settings":{"noise":0.01,"warmup":1}}.
    const json reordered = json::parse(R"({"scenarios":[{"pattern":"h2d_copy","axes":{}}],
                                           "settings":{"warmup":1,"noise":0.01}})");
    CHECK(profile_hash(reordered) == profile_hash(a));
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : std::string(R"({"scenarios":[{"axes":{},"pattern":"h2d_copy"}],"settings":{"noise":0.01,"warmup":1}})")) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    CHECK(profile_hash(a) == fmt::format("{:016x}", h));
}

TEST_CASE("bad profiles: one usage error naming the file and the problem") {
    const Registry registry = fake_registry();
    ProfileDir d;
    struct Bad {
        std::string file, text, expect;
    };
    const std::vector<Bad> cases = {
        {"unknown_key.json", R"({"setings": {}, "scenarios": [{"pattern": "latency"}]})", "unknown key 'setings'"},
        {"entry_key.json", R"({"scenarios": [{"pattern": "h2d_copy", "axis": {"size": ["1M"]}}]})", "unknown key 'axis'"},
        {"unknown_setting.json", R"({"settings": {"samples": 5}, "scenarios": [{"pattern": "latency"}]})", "unknown setting 'samples'"},
        {"settings_type.json", R"({"settings": "fast", "scenarios": [{"pattern": "latency"}]})", "'settings' has the wrong type"},
        {"setting_type.json", R"({"settings": {"min_samples": "many"}, "scenarios": [{"pattern": "latency"}]})", "min_samples"},
        {"name_type.json", R"({"name": 3, "scenarios": [{"pattern": "latency"}]})", "'name' has the wrong type"},
        {"scenarios_type.json", R"({"scenarios": {"pattern": "latency"}})", "'scenarios' has the wrong type"},
        {"entry_type.json", R"({"scenarios": ["latency"]})", "'entry' has the wrong type"},
        {"no_pattern.json", R"({"scenarios": [{"axes": {}}]})", "'pattern' is missing"},
        {"pattern_type.json", R"({"scenarios": [{"pattern": 7}]})", "'pattern' has the wrong type"},
        {"axes_type.json", R"({"scenarios": [{"pattern": "h2d_copy", "axes": {"size": "1M"}}]})", "'axes.size' has the wrong type"},
        {"axes_empty.json", R"({"scenarios": [{"pattern": "h2d_copy", "axes": {"size": []}}]})", "'axes.size' has the wrong type"},
        {"unknown_scenario.json", R"({"scenarios": [{"pattern": "h2d_cpy"}]})", "did you mean h2d_copy"},
        {"unknown_axis.json", R"({"scenarios": [{"pattern": "latency", "axes": {"size": ["1M"]}}]})", "axis named 'size'"},
        {"bad_value.json", R"({"scenarios": [{"pattern": "h2d_copy", "axes": {"host_mem": ["gpu"]}}]})", "invalid value 'gpu'"},
        {"bad_size.json", R"({"scenarios": [{"pattern": "h2d_copy", "axes": {"size": ["lots"]}}]})", "lots"},
        {"bad_range.json", R"({"settings": {"min_samples": 50, "max_samples": 10}, "scenarios": [{"pattern": "latency"}]})", "below the minimum"},
        {"no_scenarios.json", R"({"settings": {"warmup": 1}})", "names no scenarios"},
        {"not_json.json", R"({"scenarios": [)", "not valid JSON"},
        {"empty.json", "", "is empty"},
        {"array.json", "[1, 2]", "not a JSON object"},
        {"missing_parent.json", R"({"extends": "nowhere.json"})", "does not exist"},
        {"unknown_parent.json", R"({"extends": "quik"})", "did you mean quick"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.file);
        const auto path = d.write(c.file, c.text);
        const auto err = usage_error([&] { (void)load_profile(path, registry); });
        CHECK(contains(err, c.expect));
        CHECK(contains(err, c.file));
        CHECK(err.find('\n') == std::string::npos);
    }
    CHECK(contains(usage_error([&] { (void)load_profile("qick", registry); }), "unknown profile 'qick'"));
    CHECK(contains(usage_error([&] { (void)load_profile("qick", registry); }), "did you mean quick"));
    CHECK(contains(usage_error([&] { (void)load_profile((d.dir / "absent.json").string(), registry); }), "does not exist"));
    CHECK(contains(usage_error([&] { (void)load_profile(d.dir.string(), registry); }), "is a directory"));
}

TEST_CASE("cycles in extends are named") {
    ProfileDir d;
    const auto a = d.write("a.json", R"({"extends": "b.json", "scenarios": [{"pattern": "latency"}]})");
    d.write("b.json", R"({"extends": "a.json"})");
    const auto err = usage_error([&] { (void)resolve_profile(a, builtin_registry()); });
    CHECK(contains(err, "cycle"));
    CHECK(contains(err, "a.json -> "));
    CHECK(contains(err, "b.json -> "));
    const auto self = d.write("self.json", R"({"extends": "self.json"})");
    CHECK(contains(usage_error([&] { (void)resolve_profile(self, builtin_registry()); }), "cycle"));
}

} // TEST_SUITE
