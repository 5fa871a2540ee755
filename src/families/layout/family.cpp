// The layout family's descriptor (include/interopbench/family.hpp): its scenarios and what it adds
// to the built-in profiles. families/builtin.cpp names it in the one list of families.
#include "interopbench/family.hpp"

namespace interopbench {

void register_layout(Registry& r); // layout.cpp

Family layout_family() {
    return {
        .name = "layout",
        .summary = "Layout conversions on the host and the GPU: transposes, AoS/SoA, Arrow columns, strided views",
        .add_scenarios = [](Registry& r, const FamilyOptions&, std::vector<std::string>&) { register_layout(r); },
        .profiles =
            {
                {"quick", R"([
                    {"pattern": "layout_transpose", "axes": {"variant": ["gpu", "host"], "dtype": ["fp32"], "shape": ["square"], "size": ["64M"]}},
                    {"pattern": "layout_aos_soa", "axes": {"variant": ["gpu", "host"], "record": ["mixed"], "direction": ["aos_to_soa"], "size": ["64M"]}},
                    {"pattern": "layout_arrow_dense", "axes": {"variant": ["gpu", "host"], "dtype": ["fp32"], "direction": ["to_dense"], "size": ["64M"]}},
                    {"pattern": "layout_strided", "axes": {"variant": ["gpu", "host"], "dtype": ["fp32"], "view": ["step2"], "size": ["64M"]}}
                ])"},
                {"ci", R"([
                    {"pattern": "layout_transpose", "axes": {"variant": ["gpu"], "dtype": ["fp32", "int8"], "shape": ["square"], "size": ["256M"]}},
                    {"pattern": "layout_aos_soa", "axes": {"variant": ["gpu"], "record": ["mixed"], "size": ["256M"]}},
                    {"pattern": "layout_arrow_dense", "axes": {"variant": ["gpu"], "dtype": ["fp32"], "size": ["256M"]}},
                    {"pattern": "layout_strided", "axes": {"variant": ["gpu"], "dtype": ["fp32"], "size": ["256M"]}}
                ])"},
                {"full", R"([
                    {"pattern": "layout_*"}
                ])"},
            },
    };
}

} // namespace interopbench
