// `interopbench doctor`: checks of this machine, each PASS/WARN/FAIL/SKIP/INFO with evidence
// and a fix; exit 1 on any FAIL so CI can gate on it. A machine without a GPU skips the GPU
// checks and exits 0 (a CI step on a build machine passes) unless --require-gpu is given.
#include <iostream>
#include <memory>

#include "cli/cli.hpp"
#include "gpu/gpu_facts.hpp"
#include "topology/doctor.hpp"

namespace interopbench::cli {

void add_doctor(CLI::App& app, Outcome& out) {
    auto format = std::make_shared<std::string>("table");
    auto require_gpu = std::make_shared<bool>(false), wide = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand(
        "doctor", "Check this machine for what slows data movement down (PCIe link under load, peer access, "
                  "NVLinks, affinity, limits, clocks, ECC, NCCL/CUDA variables, GPUDirect RDMA); exit 1 on any FAIL, "
                  "0 otherwise (without a GPU the GPU checks are skipped)");
    add_format_option(cmd, *format, Command::doctor, "output format");
    cmd->add_flag("--require-gpu", *require_gpu, "no usable GPU is a FAIL (exit 1), for CI on GPU machines");
    add_wide_option(cmd, *wide);
    cmd->callback([format, require_gpu, wide, &out] {
        const Format& f = find_format(*format, Command::doctor);
        DoctorFacts facts = gather_doctor_facts(probe_machine(""));
        facts.require_gpu = *require_gpu;
        const std::vector<CheckResult> results = run_checks(facts);
        std::cout << f.render(ChecksView{results, output_width(*wide)});
        out.code = static_cast<int>(any_failed(results) ? ExitCode::failed : ExitCode::ok);
    });
}

} // namespace interopbench::cli
