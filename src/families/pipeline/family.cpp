// The pipeline family's descriptor (include/interopbench/family.hpp): its scenarios, the storage
// site's options (its dataset files live there), the pre-flight that checks its axes and claims
// the dataset's space, the diagnosis after the run and what it adds to the built-in profiles.
// families/builtin.cpp names it in the one list of families.
#include "families/pipeline/pipeline.hpp"
#include "hostio/storage_io.hpp"
#include "interopbench/family.hpp"

namespace interopbench {

void register_pipeline(Registry& r, std::shared_ptr<storage::Site> site); // pipeline.cpp
void annotate_pipeline_results(std::vector<Result>& results); // pipeline.cpp

Family pipeline_family() {
    return {
        .name = "pipeline",
        .summary = "A whole loading pipeline (read, copy, allocate, convert, hand off), naive against each fix and tuned, and its stages alone",
        .add_scenarios = [](Registry& r, const FamilyOptions& options, std::vector<std::string>&) {
                register_pipeline(r, storage::run_site(r, options));
            },
        .options = storage::site_options(),
        .preflight =
            [](const RunSettings&, const std::vector<Config>& configs) {
                // site_bytes throws UsageError for a batch the dataset cannot hold; nothing to
                // claim when only the conversion stage (no file) is selected.
                if (const auto bytes = pipeline::site_bytes(configs)) storage::claim_site(storage::site_of(configs), *bytes);
            },
        .file_bytes = [](const std::vector<Config>& configs) { return pipeline::site_bytes(configs).value_or(0); },
        .annotate = annotate_pipeline_results,
        .profiles =
            {
                {"quick", R"([
                    {"pattern": "pipeline", "axes": {"variant": ["naive", "tuned"], "cache": ["warm"], "dataset": ["128M"], "batch": ["8M"], "device": ["0"]}}
                ])"},
                {"ci", R"([
                    {"pattern": "pipeline", "axes": {"variant": ["tuned"], "cache": ["warm"], "dataset": ["512M"], "batch": ["16M"], "device": ["0"]}},
                    {"pattern": "pipeline_convert", "axes": {"batch": ["16M"], "device": ["0"]}}
                ])"},
                {"full", R"([
                    {"pattern": "pipeline", "axes": {"variant": ["naive", "+pinned", "+pool", "+gpu_convert", "+zero_copy", "+overlap", "+parallel_read", "+registered_cache", "tuned"], "cache": ["cold", "warm"], "dataset": ["4G"], "batch": ["1M", "16M", "256M"]}},
                    {"pattern": "pipeline_convert", "axes": {"batch": ["1M", "16M", "256M"]}},
                    {"pattern": "pipeline_read", "axes": {"cache": ["cold", "warm"], "dataset": ["4G"], "batch": ["1M", "16M", "256M"], "host_mem": ["pageable", "pinned"]}},
                    {"pattern": "pipeline_read", "axes": {"cache": ["cold", "warm"], "dataset": ["4G"], "batch": ["16M", "256M"], "host_mem": ["pinned"], "threads": ["2", "4", "8", "16"]}}
                ])"},
            },
    };
}

} // namespace interopbench
