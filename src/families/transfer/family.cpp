// The transfer family's descriptor (include/interopbench/family.hpp): its scenario, the storage
// site's options (file endpoints keep their files there) and --no-alone, the pre-flight that
// claims the site's space for the selected sets' files, the annotation of what sharing cost, and
// what it adds to the full profile. families/builtin.cpp names it in the one list of families.
#include "families/transfer/transfer.hpp"
#include "hostio/storage_io.hpp"
#include "interopbench/family.hpp"

namespace interopbench {

Family transfer_family() {
    std::vector<FamilyOption> opts = storage::site_options();
    opts.push_back({"no-alone", OptionKind::flag,
                       "measure each transfer set only together: not also each of its transfers alone (no sharing cost then)"});
    return {
        .name = "transfer",
        .summary = "Any set of concurrent transfers (host, GPU, file, null; copy engine, SM kernel, CPU threads, file readers), "
                   "together and each alone: which shared path limited whom, and what sharing cost",
        .add_scenarios =
            [](Registry& r, const FamilyOptions& options, std::vector<std::string>&) {
                transfer::register_transfer(r, storage::run_site(r, options), !options.flag("no-alone"));
            },
        .options = opts,
        .preflight =
            [](const RunSettings&, const std::vector<Config>& configs) {
                storage::Site& site = storage::site_of(configs);
                if (const auto claim = transfer::site_claim(configs, site.named_dirs().size()))
                    storage::claim_site(site, claim->bytes, claim->read_sizes);
            },
        .file_bytes =
            [](const std::vector<Config>& configs) -> std::uint64_t {
                const storage::Site& site = storage::site_of(configs);
                const auto claim = transfer::site_claim(configs, site.named_dirs().size());
                return claim ? storage::site_file_bytes(site, claim->bytes, claim->read_sizes) : 0;
            },
        .annotate = transfer::annotate_transfer_results,
        .profiles =
            {
                {"quick", R"([
                    {"pattern": "transfer", "axes": {"set": ["host:pinned -> gpu0 via ce 64M; gpu0 -> host:pinned via ce 64M"]}}
                ])"},
                {"full", R"([
                    {"pattern": "transfer", "axes": {"set": [
                        "host:pinned -> gpu0 via ce 1G; file(warm) -> gpu0 via pipelined 1G",
                        "host:pinned -> gpu0 via ce 1G; file(cold) -> gpu0 via pipelined 1G",
                        "host:pinned -> gpu0 via ce 1G; gpu0 -> host:pinned via ce 1G",
                        "host:pinned -> gpu* via ce 1G"
                    ]}}
                ])"},
            },
    };
}

} // namespace interopbench
