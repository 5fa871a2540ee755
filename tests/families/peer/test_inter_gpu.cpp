#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "interopbench/errors.hpp"
#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"
#include "families/peer/peer.hpp"
#include "families/builtin.hpp"
#include "../../test_support.hpp"

using namespace interopbench;

namespace {

Registry peer_registry() {
    return builtin_registry({"peer"});
}

/// Why `id` with `values` is skipped on `m`, or "" when it would run. Only configurations
/// that are decided before any CUDA query may be asked here.
std::string skip_reason(const Machine& m, const std::string& id,
                        std::vector<std::pair<std::string, std::string>> values) {
    const Registry r = peer_registry();
    const Scenario* s = r.find(id);
    REQUIRE(s != nullptr);
    const auto why = s->unsupported(m, typed_params(s->info(), values, m));
    return why ? *why : std::string();
}

class FakeWorld final : public World {
public:
    int rank() const override { return 0; }
    int size() const override { return 2; }
    int local_rank() const override { return 0; }
    void broadcast(void*, std::size_t, int) override {}
    void barrier() override {}
    std::vector<std::string> gather(const std::string& mine, int) override { return {mine}; }
};

} // namespace

TEST_SUITE("peer") {

TEST_CASE("peer scenarios register in a fixed order with consistent metadata") {
    const Registry r = peer_registry();
    std::vector<std::string> ids;
    for (const auto& s : r.all()) ids.push_back(s->info().id);
    CHECK(ids == std::vector<std::string>{"peer_copy", "peer_bidir", "peer_staged",
                                          "peer_one_to_all", "peer_all_to_one", "latency"});
    for (const auto& s : r.all()) {
        const auto& info = s->info();
        CAPTURE(info.id);
        CHECK(info.family == "peer");
        CHECK(info.needs_gpu);
        CHECK(!info.summary.empty());
        CHECK(!info.counting.empty());
        REQUIRE(!info.metrics.empty());
        for (const auto& m : info.metrics) {
            CAPTURE(m.name);
            CHECK((m.unit == "B/s" || m.unit == "s"));
            CHECK((m.unit == "B/s") == (m.better == Better::higher));
            CHECK(!m.help.empty());
        }
        for (const auto& a : info.axes) {
            CAPTURE(a.name);
            CHECK(!a.help.empty());
            if (a.kind == AxisKind::size) {
                REQUIRE(!a.defaults.empty());
                for (const auto& d : a.defaults) CHECK(parse_size(d) == std::stoull(d));
            }
            if (a.kind == AxisKind::device || a.kind == AxisKind::device_pair)
                CHECK(a.defaults.empty());
        }
    }
}

TEST_CASE("peer copy axes and metrics are the public names") {
    const Registry r = peer_registry();
    auto axis_names = [&](const std::string& id) {
        std::vector<std::string> out;
        for (const auto& a : r.find(id)->info().axes) out.push_back(a.name);
        return out;
    };
    auto metric_names = [&](const std::string& id) {
        std::vector<std::string> out;
        for (const auto& m : r.find(id)->info().metrics) out.push_back(m.name);
        return out;
    };
    CHECK(axis_names("peer_copy") == std::vector<std::string>{"pair", "engine", "mode", "size"});
    CHECK(r.find("peer_copy")->info().axes[0].kind == AxisKind::device_pair);
    CHECK(r.find("peer_copy")->info().axes[1].choices == std::vector<std::string>{"ce", "sm"});
    CHECK(r.find("peer_copy")->info().axes[2].choices ==
          std::vector<std::string>{"write", "read"});
    CHECK(r.find("peer_copy")->info().axes[3].defaults.back() == std::to_string(1ull << 30));
    CHECK(metric_names("peer_copy") == std::vector<std::string>{"bandwidth", "time"});
    CHECK(metric_names("peer_bidir") == std::vector<std::string>{"bandwidth", "bandwidth_sum",
                                                                 "bandwidth_fwd",
                                                                 "bandwidth_rev"});
    CHECK(axis_names("peer_staged") == std::vector<std::string>{"pair", "size", "chunk"});
    CHECK(axis_names("peer_one_to_all") ==
          std::vector<std::string>{"root", "engine", "mode", "size"});
    CHECK(metric_names("peer_all_to_one") ==
          std::vector<std::string>{"bandwidth", "bandwidth_slowest", "time"});
    CHECK(axis_names("latency") ==
          std::vector<std::string>{"target", "device", "peer", "footprint"});
    CHECK(r.find("latency")->info().axes[0].choices ==
          std::vector<std::string>{"local", "host", "peer"});
    CHECK(metric_names("latency") == std::vector<std::string>{"latency"});
}

TEST_CASE("GPU pairs parse as SOURCE>DESTINATION") {
    const auto p = parse_device_pair("0>1");
    CHECK(p.src == 0);
    CHECK(p.dst == 1);
    const auto q = parse_device_pair(" 12 > 3 ");
    CHECK(q.src == 12);
    CHECK(q.dst == 3);
}

TEST_CASE("malformed GPU pairs are usage errors with a hint") {
    for (const char* bad : {"", "0", "0>", ">1", "a>b", "0-1", "-1>0", "0>-1", "0>0", "0>1>2",
                            "1.5>2", "0 1", "99999999999>0"}) {
        CAPTURE(bad);
        try {
            parse_device_pair(bad);
            FAIL("accepted");
        } catch (const UsageError& e) {
            CHECK(!e.hint().empty());
        }
    }
}

TEST_CASE("without CUDA every planned peer configuration is skipped with the reason") {
    Machine m;
    m.cuda_available = false;
    m.cuda_note = "no NVIDIA driver";
    const Registry r = peer_registry();
    RunPlan plan;
    plan.entries.push_back({"*", {}});
    const auto configs = expand_plan(r, plan, m);
    REQUIRE(!configs.empty());
    std::set<std::string> covered;
    Runner runner(m, plan.settings);
    for (const auto& c : configs) {
        CAPTURE(c.key());
        const Result res = runner.run_one(c);
        CHECK(res.status == Status::skipped);
        CHECK(res.reason == "no NVIDIA driver");
        covered.insert(res.scenario);
    }
    CHECK(covered.size() == r.all().size());
}

TEST_CASE("a multi-process run skips peer scenarios") {
    Machine m = testing::fake_machine(2, 0, {0, 1});
    FakeWorld world;
    m.world = &world;
    const auto why = skip_reason(m, "peer_copy",
                                 {{"pair", "0>1"}, {"engine", "ce"}, {"mode", "write"},
                                  {"size", "1048576"}});
    CHECK(why.find("MPI") != std::string::npos);
}

TEST_CASE("GPUs outside the machine or the selection are skipped with the reason") {
    const Machine m = testing::fake_machine(4, 0, {0, 1});
    CHECK(!peer::device_unavailable(m, 1));
    CHECK(peer::device_unavailable(m, 7).value().find("does not exist") != std::string::npos);
    CHECK(peer::device_unavailable(m, 2).value().find("not among the selected GPUs (0,1)") !=
          std::string::npos);
    const auto why = skip_reason(m, "peer_copy",
                                 {{"pair", "0>2"}, {"engine", "ce"}, {"mode", "write"},
                                  {"size", "1048576"}});
    CHECK(why.find("GPU 2") != std::string::npos);
    CHECK(skip_reason(m, "peer_staged", {{"pair", "3>0"}, {"size", "1048576"}, {"chunk", "4096"}})
              .find("GPU 3") != std::string::npos);
    // The copy engine needs no capability query: the pair runs.
    CHECK(skip_reason(m, "peer_copy",
                      {{"pair", "1>0"}, {"engine", "ce"}, {"mode", "read"}, {"size", "4096"}})
              .empty());
}

TEST_CASE("plan expansion rejects a pair naming a GPU the machine lacks") {
    const Machine m = testing::fake_machine(2, 0, {0, 1});
    const Registry r = peer_registry();
    RunPlan plan;
    plan.entries.push_back({"peer_copy", {{"pair", {"0>7"}}}});
    CHECK_THROWS_AS(expand_plan(r, plan, m), UsageError);
}

TEST_CASE("bidirectional pairs run once, under the lower ordinal first") {
    const Machine m = testing::fake_machine(2, 0, {0, 1});
    const auto why = skip_reason(m, "peer_bidir",
                                 {{"pair", "1>0"}, {"engine", "ce"}, {"mode", "write"},
                                  {"size", "4096"}});
    CHECK(why.find("pair 0>1") != std::string::npos);
    CHECK(skip_reason(m, "peer_bidir",
                      {{"pair", "0>1"}, {"engine", "ce"}, {"mode", "write"}, {"size", "4096"}})
              .empty());
}

TEST_CASE("one-to-all and all-to-one need a second selected GPU") {
    const Machine one = testing::fake_machine(2, 0, {0});
    for (const char* id : {"peer_one_to_all", "peer_all_to_one"}) {
        CAPTURE(id);
        CHECK(skip_reason(one, id,
                          {{"root", "0"}, {"engine", "ce"}, {"mode", "write"}, {"size", "4096"}})
                  .find("at least two") != std::string::npos);
    }
    const Machine two = testing::fake_machine(2, 0, {0, 1});
    CHECK(skip_reason(two, "peer_one_to_all",
                      {{"root", "1"}, {"engine", "ce"}, {"mode", "read"}, {"size", "4096"}})
              .empty());
}

TEST_CASE("latency runs local and host once per GPU and peer only across GPUs") {
    const Machine m = testing::fake_machine(2, 0, {0, 1});
    auto latency = [&](const char* target, const char* device, const char* peer_gpu,
                       const char* footprint = "1048576") {
        return skip_reason(m, "latency",
                           {{"target", target}, {"device", device}, {"peer", peer_gpu},
                            {"footprint", footprint}});
    };
    CHECK(latency("local", "0", "0").empty());
    CHECK(latency("host", "1", "1").empty());
    CHECK(latency("local", "0", "1").find("under peer=0") != std::string::npos);
    CHECK(latency("host", "1", "0").find("under peer=1") != std::string::npos);
    CHECK(latency("peer", "0", "0").find("different") != std::string::npos);
    CHECK(latency("local", "0", "0", "128").find("footprint") != std::string::npos);
    CHECK(latency("local", "5", "5").find("GPU 5") != std::string::npos);
}

TEST_CASE("the pointer-chase order is one cycle through every node") {
    const auto order = peer::chase_order(1000, 7);
    REQUIRE(order.size() == 1000);
    CHECK(order[0] == 0);
    auto sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::uint32_t> all(1000);
    std::iota(all.begin(), all.end(), 0u);
    CHECK(sorted == all);
    CHECK(order == peer::chase_order(1000, 7));
    CHECK(order != peer::chase_order(1000, 8));
    CHECK(order != all); // shuffled, not a linear walk

    const auto next = peer::chase_next(order);
    std::vector<bool> seen(order.size(), false);
    std::uint32_t at = 0;
    for (std::size_t k = 0; k < order.size(); ++k) {
        CHECK(at == order[k]);
        CHECK(!seen[at]);
        seen[at] = true;
        at = next[at];
    }
    CHECK(at == 0); // back at the start after visiting every node once

    CHECK(peer::chase_order(2, 1) == std::vector<std::uint32_t>{0, 1});
    CHECK(peer::chase_next({0, 1}) == std::vector<std::uint32_t>{1, 0});
}

} // TEST_SUITE("peer")

// ---- NCCL collectives and multi-process runs ------------------------------------------

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "gpu/nccl_loader.hpp"
#include "interopbench/merge.hpp"
#include "interopbench/report.hpp"
#include "families/nccl/nccl.hpp"

namespace {

Registry nccl_registry() {
    return builtin_registry({"nccl"});
}

/// A machine with `count` GPUs (each with 100 GiB free), `selected` chosen and NCCL loaded.
Machine nccl_machine(int count, std::vector<int> selected) {
    Machine m = testing::fake_machine(count, 100ull << 30, std::move(selected));
    m.set_library({"nccl", "2.28.3", ""});
    return m;
}

/// A world of `size` ranks seen from rank `rank`, local rank `local`.
class RankWorld final : public World {
public:
    RankWorld(int rank, int size, int local) : m_rank(rank), m_size(size), m_local(local) {}
    int rank() const override { return m_rank; }
    int size() const override { return m_size; }
    int local_rank() const override { return m_local; }
    void broadcast(void*, std::size_t, int) override {}
    void barrier() override {}
    std::vector<std::string> gather(const std::string& mine, int) override { return {mine}; }

private:
    int m_rank, m_size, m_local;
};

std::string nccl_skip(const Machine& m, const std::string& id, const std::string& size,
                      const std::string& dtype = "float", const std::string& inplace = "0") {
    const Registry r = nccl_registry();
    const Scenario* s = r.find(id);
    REQUIRE(s != nullptr);
    std::vector<std::pair<std::string, std::string>> values{{"size", size}, {"dtype", dtype}};
    for (const auto& a : s->info().axes) {
        if (a.name == "op") values.emplace_back("op", "sum");
        if (a.name == "inplace") values.emplace_back("inplace", inplace);
    }
    const auto why = s->unsupported(m, typed_params(s->info(), values, m));
    return why ? *why : std::string();
}

const std::vector<std::string> k_nccl_ids{"nccl_all_reduce", "nccl_all_gather", "nccl_reduce_scatter",
                                          "nccl_broadcast",  "nccl_reduce",     "nccl_alltoall",
                                          "nccl_sendrecv"};

} // namespace

TEST_SUITE("nccl") {

TEST_CASE("NCCL scenarios register in a fixed order with the public names") {
    const Registry r = nccl_registry();
    std::vector<std::string> ids;
    for (const auto& s : r.all()) ids.push_back(s->info().id);
    CHECK(ids == k_nccl_ids);
    for (const auto& s : r.all()) {
        const auto& info = s->info();
        CAPTURE(info.id);
        CHECK(info.family == "nccl");
        CHECK(!info.counting.empty());
        std::vector<std::string> metrics;
        for (const auto& m : info.metrics) metrics.push_back(m.name);
        CHECK(metrics == std::vector<std::string>{"time", "algbw", "busbw"});
        CHECK(info.metrics[0].better == Better::lower);
        CHECK(info.metrics[0].unit == "s");
        CHECK(info.metrics[2].unit == "B/s");
        std::vector<std::string> axes;
        for (const auto& a : info.axes) axes.push_back(a.name);
        const bool reduces = info.id == "nccl_all_reduce" || info.id == "nccl_reduce_scatter" || info.id == "nccl_reduce";
        const bool send_recv = info.id == "nccl_alltoall" || info.id == "nccl_sendrecv";
        std::vector<std::string> want{"size", "dtype"};
        if (reduces) want.push_back("op");
        if (!send_recv) want.push_back("inplace");
        CHECK(axes == want);
        REQUIRE(info.axes[0].kind == AxisKind::size);
        const auto sizes = parse_size_list(info.axes[0].defaults.at(0));
        CHECK(sizes.size() == 10);
        CHECK(sizes.front() == 8);
        CHECK(sizes.back() == (1ull << 30));
        CHECK(info.axes[1].defaults == std::vector<std::string>{"float"});
    }
}

TEST_CASE("bus-bandwidth factors per collective and rank count") {
    using nccl::Collective;
    for (int n = 1; n <= 16; ++n) {
        CAPTURE(n);
        CHECK(nccl::busbw_factor(Collective::all_reduce, n) == doctest::Approx(2.0 * (n - 1) / n));
        for (auto c : {Collective::all_gather, Collective::reduce_scatter, Collective::alltoall})
            CHECK(nccl::busbw_factor(c, n) == doctest::Approx(double(n - 1) / n));
        for (auto c : {Collective::broadcast, Collective::reduce, Collective::sendrecv})
            CHECK(nccl::busbw_factor(c, n) == 1.0);
    }
    CHECK(nccl::busbw_factor(Collective::all_reduce, 2) == 1.0);
    CHECK(nccl::busbw_factor(Collective::all_gather, 2) == 0.5);
    CHECK(nccl::busbw_factor(Collective::all_reduce, 8) == 1.75);
    CHECK(nccl::busbw_factor(Collective::all_reduce, 1) == 0.0);
    CHECK(std::string(nccl::busbw_formula(Collective::all_reduce)) == "2(n-1)/n");
    CHECK(std::string(nccl::busbw_formula(Collective::alltoall)) == "(n-1)/n");
    CHECK(std::string(nccl::busbw_formula(Collective::sendrecv)) == "1");
}

TEST_CASE("sizes follow the nccl-tests convention and round down to whole elements per rank") {
    using nccl::Collective;
    auto ar = nccl::size_collective(Collective::all_reduce, 1001, 4, 2);
    CHECK(ar.bytes == 1000);
    CHECK(ar.granule == 4);
    CHECK(ar.count == 250);
    CHECK(ar.send_bytes == 1000);
    CHECK(ar.recv_bytes == 1000);

    const auto gib = 1ull << 30;
    auto ag = nccl::size_collective(Collective::all_gather, gib, 4, 2);
    CHECK(ag.bytes == gib);
    CHECK(ag.count == gib / 8); // sendcount
    CHECK(ag.send_bytes == gib / 2);
    CHECK(ag.recv_bytes == gib);
    auto rs = nccl::size_collective(Collective::reduce_scatter, gib, 4, 2);
    CHECK(rs.count == gib / 8); // recvcount
    CHECK(rs.send_bytes == gib);
    CHECK(rs.recv_bytes == gib / 2);

    auto a2a = nccl::size_collective(Collective::alltoall, 100, 4, 3);
    CHECK(a2a.granule == 12);
    CHECK(a2a.bytes == 96);
    CHECK(a2a.count == 8); // per peer
    CHECK(a2a.send_bytes == 96);
    CHECK(a2a.recv_bytes == 96);

    CHECK(nccl::size_collective(Collective::all_gather, 8, 8, 2).bytes == 0);
    CHECK(nccl::size_collective(Collective::broadcast, 8, 8, 2).bytes == 8);
    CHECK(nccl::size_collective(Collective::sendrecv, 7, 2, 4).bytes == 6);

    CHECK(nccl::element_bytes("float") == 4u);
    CHECK(nccl::element_bytes("bfloat16") == 2u);
    CHECK(nccl::element_bytes("int8") == 1u);
    CHECK(nccl::element_bytes("double") == 8u);
    CHECK(!nccl::element_bytes("float8"));
}

TEST_CASE("NCCL collectives are skipped with the reason where they cannot run") {
    Machine none;
    none.cuda_available = false;
    none.cuda_note = "no NVIDIA driver";
    for (const auto& id : k_nccl_ids) CHECK(nccl_skip(none, id, "1048576") == "no NVIDIA driver");

    Machine missing = nccl_machine(2, {0, 1});
    missing.set_library({"nccl", "", "libnccl.so.2 could not be loaded (file not found)"});
    for (const auto& id : k_nccl_ids) {
        CAPTURE(id);
        const auto why = nccl_skip(missing, id, "1048576");
        CHECK(why.find("NCCL is not available") == 0);
        CHECK(why.find("libnccl.so.2 could not be loaded") != std::string::npos);
    }

    const Machine one = nccl_machine(2, {0});
    for (const auto& id : k_nccl_ids) CHECK(nccl_skip(one, id, "1048576").find("needs at least 2 GPUs") == 0);

    const Machine two = nccl_machine(2, {0, 1});
    for (const auto& id : k_nccl_ids) CHECK(nccl_skip(two, id, "1048576").empty());
    // 8 B of double is one element: enough for all_reduce, not for all_gather over 2 ranks.
    CHECK(nccl_skip(two, "nccl_all_reduce", "8", "double").empty());
    const auto why = nccl_skip(two, "nccl_all_gather", "8", "double");
    CHECK(why.find("multiple of 16 B") != std::string::npos);
    CHECK(why.find("2 ranks") != std::string::npos);
    // Too large for the GPUs' free memory: out of place needs both buffers.
    const std::string big = std::to_string(64ull << 30);
    CHECK(nccl_skip(two, "nccl_all_reduce", big).find("free") != std::string::npos);
    CHECK(nccl_skip(two, "nccl_all_reduce", big, "float", "1").empty());
}

TEST_CASE("without a world the communicator spans the selected GPUs") {
    const Machine three = nccl_machine(4, {0, 1, 3});
    CHECK(nccl_skip(three, "nccl_all_gather", "96").empty());
    const auto why = nccl_skip(three, "nccl_all_gather", "8");
    CHECK(why.find("3 ranks") != std::string::npos);
    CHECK(why.find("multiple of 12 B") != std::string::npos);
    CHECK(nccl_skip(three, "nccl_all_reduce", "8").empty());
}

TEST_CASE("under MPI each rank drives one GPU") {
    Machine m = nccl_machine(2, {0, 1});
    RankWorld rank1(1, 2, 1);
    m.world = &rank1;
    CHECK(nccl_skip(m, "nccl_all_reduce", "1048576").empty());
    m.selected = {1}; // the selection already narrowed to this rank's GPU
    CHECK(nccl_skip(m, "nccl_all_reduce", "1048576").empty());

    RankWorld alone(0, 1, 0);
    m.world = &alone;
    CHECK(nccl_skip(m, "nccl_all_reduce", "1048576").find("needs at least 2 ranks") == 0);

    RankWorld crowded(2, 3, 2);
    m.world = &crowded;
    m.selected = {0, 1};
    CHECK(nccl_skip(m, "nccl_sendrecv", "1048576").find("local rank 2") != std::string::npos);
}

TEST_CASE("the default plan expands every collective over the size sweep, and skips without CUDA") {
    Machine m;
    m.cuda_available = false;
    m.cuda_note = "no NVIDIA driver";
    const Registry r = nccl_registry();
    RunPlan plan;
    plan.entries.push_back({"nccl_*", {}});
    const auto configs = expand_plan(r, plan, m);
    CHECK(configs.size() == 70);
    Runner runner(m, plan.settings);
    for (const auto& c : configs) {
        const Result res = runner.run_one(c);
        CHECK(res.status == Status::skipped);
        CHECK(res.reason == "no NVIDIA driver");
    }
}

TEST_CASE("the NCCL probe gives a version or the reason") {
    Machine m;
    gpu::probe_nccl(m);
    const RuntimeLibrary* nccl = m.library("nccl");
    REQUIRE(nccl != nullptr);
    CHECK(nccl->version.empty() != nccl->note.empty());
    if (nccl->loaded()) CHECK(std::count(nccl->version.begin(), nccl->version.end(), '.') == 2);
    CHECK(gpu::nccl_version_string(22803) == "2.28.3");
    CHECK(gpu::nccl_version_string(21400) == "2.14.0");
    CHECK(gpu::nccl_version_string(2804) == "2.8.4");
    CHECK(gpu::nccl_version_string(0).empty());
}

TEST_CASE("verification data makes every reduction exact") {
    using nccl::ValueModel;
    const std::size_t n = ValueModel::k_period;

    SUBCASE("float sums over 2 ranks") {
        const ValueModel vm("float", "sum", 2);
        std::vector<float> a(n), b(n), sum(n);
        vm.write_inputs(0, 0, n, a.data());
        vm.write_inputs(1, 0, n, b.data());
        vm.write_reduced(0, n, sum.data());
        std::size_t bad = 0, differ = 0;
        for (std::size_t i = 0; i < n; ++i) {
            bad += a[i] < 1 || a[i] != std::floor(a[i]) || sum[i] != a[i] + b[i];
            differ += a[i] != b[i];
        }
        CHECK(bad == 0);
        CHECK(differ > n / 2);
        // The data repeats every period.
        float again = 0;
        vm.write_inputs(0, n + 5, 1, &again);
        CHECK(again == a[5]);
        CHECK(vm.method().find("bit for bit") != std::string::npos);
        float wrong = sum[0] + 1;
        CHECK(!vm.same(&wrong, &sum[0]));
        CHECK(vm.same(&sum[0], &sum[0]));
    }
    SUBCASE("int8 products wrap as on the GPU") {
        const ValueModel vm("int8", "prod", 9);
        std::vector<std::vector<std::int8_t>> in(9, std::vector<std::int8_t>(n));
        for (int r = 0; r < 9; ++r) vm.write_inputs(r, 0, n, in[r].data());
        std::vector<std::int8_t> prod(n);
        vm.write_reduced(0, n, prod.data());
        std::size_t bad = 0, twos = 0;
        for (std::size_t i = 0; i < n; ++i) {
            std::uint8_t p = 1;
            for (int r = 0; r < 9; ++r) {
                bad += in[r][i] != 1 && in[r][i] != 2;
                twos += in[r][i] == 2;
                p = static_cast<std::uint8_t>(p * static_cast<std::uint8_t>(in[r][i]));
            }
            bad += static_cast<std::uint8_t>(prod[i]) != p;
        }
        CHECK(bad == 0);
        CHECK(twos > 0);
    }
    SUBCASE("integer avg is the sum divided by n, truncated") {
        const ValueModel vm("int32", "avg", 3);
        std::vector<std::int32_t> a(n), b(n), c(n), avg(n);
        vm.write_inputs(0, 0, n, a.data());
        vm.write_inputs(1, 0, n, b.data());
        vm.write_inputs(2, 0, n, c.data());
        vm.write_reduced(0, n, avg.data());
        std::size_t bad = 0;
        for (std::size_t i = 0; i < n; ++i) bad += avg[i] != (a[i] + b[i] + c[i]) / 3;
        CHECK(bad == 0);
    }
    SUBCASE("half and bfloat16 sums stay within their exact integers") {
        for (const char* dtype : {"half", "bfloat16"}) {
            CAPTURE(dtype);
            const ValueModel vm(dtype, "sum", 64);
            CHECK(vm.element_bytes() == 2);
            CHECK(vm.method().find("bit for bit") != std::string::npos);
            std::vector<std::uint16_t> in(n);
            vm.write_inputs(5, 0, n, in.data());
            CHECK(vm.show(&in[0]).find('.') == std::string::npos); // an integer
        }
    }
    SUBCASE("floating avg is compared within rounding") {
        const ValueModel vm("float", "avg", 3);
        CHECK(vm.method().find("within") != std::string::npos);
        std::vector<float> want(1);
        vm.write_reduced(0, 1, want.data());
        float close = std::nextafter(want[0], 100.0f), far = want[0] * 1.01f, nan = std::nanf("");
        CHECK(vm.same(&close, &want[0]));
        CHECK(!vm.same(&far, &want[0]));
        CHECK(!vm.same(&nan, &want[0]));
    }
    SUBCASE("gather-type data uses a wide range") {
        const ValueModel vm("uint8", "", 4);
        std::vector<std::uint8_t> in(n);
        vm.write_inputs(3, 0, n, in.data());
        CHECK(*std::max_element(in.begin(), in.end()) > 11);
        CHECK(*std::min_element(in.begin(), in.end()) >= 1);
    }
    CHECK_THROWS_AS(ValueModel("float8", "sum", 2), std::invalid_argument);
    CHECK_THROWS_AS(ValueModel("float", "xor", 2), std::invalid_argument);
}

} // TEST_SUITE("nccl")

namespace {

Result rank_result(const std::string& key, Status status, std::vector<double> samples,
                   Better better = Better::lower, std::string reason = {}) {
    Result r;
    r.key = key;
    r.scenario = key.substr(0, key.find('/'));
    r.family = "test";
    r.params.set("size", "1024");
    r.status = status;
    r.reason = std::move(reason);
    r.stop_reason = status == Status::ok ? "converged" : "";
    r.wall_time_s = samples.empty() ? 0.1 : samples.front();
    MetricResult m;
    m.info = {better == Better::lower ? "time" : "bandwidth", better == Better::lower ? "s" : "B/s", better, ""};
    m.samples = samples;
    m.stats = compute_stats(samples);
    r.metrics.push_back(m);
    return r;
}

std::string encoded(int rank, std::vector<Result> results) {
    return encode_rank_results({rank, rank, "node" + std::to_string(rank / 2), "0000:1b:00.0"}, results);
}

std::vector<Result> merged_results(const std::vector<std::string>& gathered) { return merge_rank_results(gathered).results; }

} // namespace

TEST_SUITE("mpi") {

TEST_CASE("merging keeps the slowest rank's statistics and every rank's figures") {
    auto fast = rank_result("a/size=1024", Status::ok, {1.0, 1.1, 0.9});
    fast.details = {{"from", 0}};
    auto slow = rank_result("a/size=1024", Status::ok, {2.0, 2.2, 1.8});
    slow.details = {{"from", 1}};
    const auto merged = merged_results({encoded(0, {fast}), encoded(1, {slow})});
    REQUIRE(merged.size() == 1);
    const Result& m = merged[0];
    CHECK(m.key == "a/size=1024");
    CHECK(m.status == Status::ok);
    CHECK(m.reason.empty());
    CHECK(m.params.get("size") == "1024");
    REQUIRE(m.metrics.size() == 1);
    CHECK(m.metrics[0].stats.median == doctest::Approx(2.0));
    CHECK(m.metrics[0].samples.size() == 3);
    CHECK(m.details["from"] == 1);
    CHECK(m.details["slowest_rank"] == 1);
    CHECK(m.details["world_size"] == 2);
    REQUIRE(m.details["ranks"].size() == 2);
    CHECK(m.details["ranks"][0]["rank"] == 0);
    CHECK(m.details["ranks"][0]["host"] == "node0");
    CHECK(m.details["ranks"][0]["metrics"]["time"]["median"].get<double>() == doctest::Approx(1.0));
    CHECK(m.details["ranks"][1]["metrics"]["time"]["median"].get<double>() == doctest::Approx(2.0));
    CHECK(m.details["ranks"][1]["status"] == "ok");
    CHECK(m.wall_time_s == doctest::Approx(2.0));

    // Where higher is better, the slowest rank has the lowest median.
    const auto bw = merged_results({encoded(0, {rank_result("b/x", Status::ok, {5, 5, 5}, Better::higher)}),
                                        encoded(1, {rank_result("b/x", Status::ok, {9, 9, 9}, Better::higher)})});
    CHECK(bw[0].metrics[0].stats.median == 5);
    CHECK(bw[0].details["slowest_rank"] == 0);
}

TEST_CASE("merged status: a failure on any rank fails the result, and reasons name the ranks") {
    const auto failed = merged_results({encoded(0, {rank_result("a/x", Status::ok, {1, 1, 1})}),
                                            encoded(1, {rank_result("a/x", Status::failed, {}, Better::lower, "boom")})});
    CHECK(failed[0].status == Status::failed);
    CHECK(failed[0].reason == "rank 1: boom");
    CHECK(failed[0].details["ranks"][1]["reason"] == "boom");

    const auto skipped = merged_results(
        {encoded(0, {rank_result("a/x", Status::skipped, {}, Better::lower, "no GPU")}),
         encoded(1, {rank_result("a/x", Status::skipped, {}, Better::lower, "no GPU")})});
    CHECK(skipped[0].status == Status::skipped);
    CHECK(skipped[0].reason == "no GPU");
    CHECK(!skipped[0].details.contains("slowest_rank"));

    const auto partly = merged_results(
        {encoded(0, {rank_result("a/x", Status::ok, {1, 1, 1})}),
         encoded(1, {rank_result("a/x", Status::skipped, {}, Better::lower, "no GPU")})});
    CHECK(partly[0].status == Status::skipped);
    CHECK(partly[0].reason == "rank 1: no GPU");

    const auto stopped = merged_results(
        {encoded(0, {rank_result("a/x", Status::interrupted, {1}, Better::lower, "interrupted")}),
         encoded(1, {rank_result("a/x", Status::ok, {1, 1, 1})})});
    CHECK(stopped[0].status == Status::interrupted);
}

TEST_CASE("a result missing on a rank fails, keys keep rank 0's order") {
    const auto merged = merged_results(
        {encoded(0, {rank_result("a/x", Status::ok, {1, 1, 1}), rank_result("b/x", Status::ok, {1, 1, 1})}),
         encoded(1, {rank_result("a/x", Status::ok, {1, 1, 1}), rank_result("c/x", Status::ok, {1, 1, 1})})});
    REQUIRE(merged.size() == 3);
    CHECK(merged[0].key == "a/x");
    CHECK(merged[0].status == Status::ok);
    CHECK(merged[1].key == "b/x");
    CHECK(merged[1].status == Status::failed);
    CHECK(merged[1].reason.find("rank 1: no result") == 0);
    CHECK(merged[1].details["ranks"][1]["status"] == "missing");
    CHECK(merged[2].key == "c/x");
    CHECK(merged[2].reason.find("rank 0: no result") == 0);
}

TEST_CASE("one rank's results survive encoding and merging") {
    auto r = rank_result("a/size=1024", Status::ok, {3, 4, 5});
    r.counting = "bytes once";
    const auto merged = merged_results({encoded(0, {r})});
    REQUIRE(merged.size() == 1);
    CHECK(merged[0].counting == "bytes once");
    CHECK(merged[0].metrics[0].samples == std::vector<double>{3, 4, 5});
    CHECK(merged[0].metrics[0].stats.median == 4);
    CHECK(merged[0].details["world_size"] == 1);
    CHECK(merged[0].details["ranks"][0]["device"] == "0000:1b:00.0");
    CHECK(merged_results({encoded(0, {})}).empty());
}

TEST_CASE("every rank's fingerprint reaches the merged report's hosts, the slowest rank is named") {
    // Two hosts alike, one rank each: rank 1 on node1 drives its second GPU and is slower.
    Machine m;
    m.driver_release = "580.1";
    m.devices = {DeviceInfo{}, DeviceInfo{}};
    m.devices[0].name = m.devices[1].name = "NVIDIA H200";
    m.devices[0].pci_bus_id = "0000:1b:00.0";
    m.devices[1].pci_bus_id = "0000:2c:00.0";
    m.devices[1].ordinal = 1;
    m.devices[1].uuid = "GPU-1111";
    m.devices[1].pcie_gen_current = 4;
    m.devices[1].pcie_gen_max = 5;
    m.set_library({"nccl", "2.28.3", ""});
    const nlohmann::json topology = {{"gpus", {{{"name", "NVIDIA H200"}, {"pci_bus_id", "0000:1b:00.0"}}}}};
    auto fingerprint = [&](int selected, const std::string& host) {
        m.selected = {selected};
        nlohmann::json f = host_fingerprint(m, topology);
        f["host"]["hostname"] = host;
        return f;
    };
    const nlohmann::json f0 = fingerprint(0, "node0"), f1 = fingerprint(1, "node1");
    CHECK(f1["devices"].size() == 1); // the rank's GPU only
    CHECK(f1["devices"][0]["pci_bus_id"] == "0000:2c:00.0");
    CHECK(f1["devices"][0]["pcie"]["gen_current"] == 4);
    CHECK(f1["software"]["driver_release"] == "580.1");
    CHECK(f1["software"]["libraries"][0]["version"] == "2.28.3");
    CHECK(f1["conditions"].is_null());
    CHECK(f0["topology_hash"].is_string());
    CHECK(f0["topology_hash"] == f1["topology_hash"]);

    const auto merged = merge_rank_results(
        {encode_rank_results({0, 0, "node0", "0000:1b:00.0", f0}, {rank_result("a/x", Status::ok, {1, 1, 1})}),
         encode_rank_results({1, 0, "node1", "0000:2c:00.0", f1}, {rank_result("a/x", Status::ok, {2, 2, 2})})});
    REQUIRE(merged.hosts.size() == 2);
    CHECK(merged.hosts[0]["rank"] == 0);
    CHECK(merged.hosts[0]["host"]["hostname"] == "node0");
    CHECK(merged.hosts[1]["rank"] == 1);
    CHECK(merged.hosts[1]["local_rank"] == 0);
    CHECK(merged.hosts[1]["device"] == "0000:2c:00.0");
    CHECK(merged.hosts[1]["host"]["hostname"] == "node1");
    CHECK(merged.hosts[1]["devices"][0]["uuid"] == "GPU-1111");
    CHECK(merged.hosts[1]["conditions"].is_null());
    REQUIRE(merged.results.size() == 1);
    CHECK(slowest_rank_words(merged.results[0].details) == "rank 1 on node1 (GPU 0000:2c:00.0)");
    CHECK(slowest_rank_words(nlohmann::json::object()).empty());
    // Details read from a report may hold anything: never an exception.
    CHECK(slowest_rank_words({{"world_size", "2"}, {"slowest_rank", 1}}).empty());
    CHECK(slowest_rank_words({{"world_size", 2}, {"slowest_rank", "1"}, {"ranks", nlohmann::json::array()}}).empty());
    CHECK(slowest_rank_words({{"world_size", 2}, {"slowest_rank", 1}, {"ranks", {7, {{"rank", "1"}}, {{"rank", 1}, {"host", 3}}}}}) ==
          "rank 1");

    // A rank without a fingerprint still has its entry; the slowest rank's host may be gone
    // (anonymized), or its GPU (a host-only rank).
    const auto bare = merge_rank_results({encode_rank_results({0, 0, "", ""}, {rank_result("a/x", Status::ok, {1, 1, 1})}),
                                          encode_rank_results({1, 1, "", ""}, {rank_result("a/x", Status::ok, {3, 3, 3})})});
    CHECK(bare.hosts[1] == nlohmann::json{{"rank", 1}, {"local_rank", 1}, {"device", ""}});
    CHECK(slowest_rank_words(bare.results[0].details) == "rank 1");
    CHECK(merged_results({encoded(0, {rank_result("a/x", Status::ok, {1, 1, 1})})})[0].details.contains("slowest_rank"));
    CHECK(slowest_rank_words(merged_results({encoded(0, {rank_result("a/x", Status::ok, {1, 1, 1})})})[0].details).empty());
}

TEST_CASE("unreadable gathered text names the rank") {
    try {
        merged_results({encoded(0, {}), "not json"});
        FAIL("accepted");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()).find("rank 1") != std::string::npos);
    }
    CHECK_THROWS_AS(merged_results({R"({"results": []})"}), std::runtime_error);
}

} // TEST_SUITE("mpi")
