#pragma once
// A host-only scenario with scripted behaviour, for runner and report tests.
#include <functional>

#include "interopbench/session.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/registry.hpp"

namespace interopbench::testing {

struct FakeBehaviour {
    std::function<Sample(int call)> sample = [](int) { return Sample{100.0, 0.01}; };
    std::function<void()> check = [] {};
    std::function<void(const Params&)> prepare = [](const Params&) {};
    std::function<std::optional<std::string>(const Params&)> unsupported = [](const Params&) {
        return std::optional<std::string>{};
    };
};

class FakeCase final : public Case {
public:
    explicit FakeCase(const FakeBehaviour& b) : m_b(b) {}
    Sample measure() override { return m_b.sample(m_calls++); }
    void check() override { m_b.check(); }
    nlohmann::json details() const override { return {{"calls", m_calls}}; }

private:
    const FakeBehaviour& m_b;
    int m_calls = 0;
};

class FakeScenario final : public Scenario {
public:
    FakeScenario(std::string id, FakeBehaviour b) : m_b(std::move(b)) {
        m_info.id = std::move(id);
        m_info.family = "fake";
        m_info.summary = "scripted";
        m_info.needs_gpu = false;
        m_info.counting = "none";
        m_info.axes = {{"size", "bytes", AxisKind::size, {"1K,2K"}, {}},
                       {"mode", "a choice", AxisKind::choice, {"a"}, {"a", "b"}}};
        m_info.metrics = {{"bandwidth", "B/s", Better::higher, "x"}, {"time", "s", Better::lower, "y"}};
    }
    const ScenarioInfo& info() const override { return m_info; }
    std::optional<std::string> unsupported(const Machine&, const Params& p) const override { return m_b.unsupported(p); }
    std::unique_ptr<Case> prepare(const CaseContext&, const Params& p) const override {
        m_b.prepare(p);
        return std::make_unique<FakeCase>(m_b);
    }

private:
    ScenarioInfo m_info;
    FakeBehaviour m_b;
};

/// Runs `plan` through the session as the binary does (no signal handlers, no report file)
/// and returns the results; `fatal` receives the fatal device error, if any.
inline std::vector<Result> run_plan(const Registry& registry, RunPlan plan, const Machine& machine,
                                    std::string* fatal = nullptr) {
    RunRecord rec;
    rec.plan = std::move(plan);
    SessionOptions options;
    options.handle_signals = false;
    const auto configs = expand_plan(registry, rec.plan, machine);
    SessionResult run = run_session(configs, std::move(rec), machine, options);
    if (fatal) *fatal = run.fatal;
    return std::move(run.record.results);
}

} // namespace interopbench::testing
