// Which transports NCCL chose, read from its debug log: recorded logs of the NCCL versions and
// networks the tool meets (tests/data/nccl), no GPU and no NCCL needed.
#include <doctest/doctest.h>

#include <string>

#include "families/nccl/nccl.hpp"
#include "../../test_support.hpp"

using namespace interopbench;

namespace {

nlohmann::json transport_of(const std::string& log_file) {
    return nccl::transport_from_log(testing::slurp(INTEROPBENCH_SOURCE_DIR "/tests/data/nccl/" + log_file));
}

} // namespace

TEST_SUITE("nccl") {

TEST_CASE("NCCL's debug log: one node over NVLink, the Socket network unused") {
    const auto t = transport_of("one-node-nvlink.log");
    CHECK(t["network"] == "Socket");
    CHECK(t["net_plugin"].is_null());
    CHECK(t["gdr"].is_null()); // no network channel, no NIC with GPUDirect RDMA
    CHECK(t["channels_via"] == nlohmann::json{"P2P/CUMEM/read"});
    CHECK(t["source"] == "NCCL debug log");
}

TEST_CASE("NCCL's debug log: two nodes over InfiniBand with GPUDirect RDMA") {
    const auto t = transport_of("two-nodes-ib-gdr.log");
    CHECK(t["network"] == "IB");
    CHECK(t["net_plugin"].is_null());
    CHECK(t["gdr"] == true);
    CHECK(t["channels_via"] == nlohmann::json{"NET/IB/GDRDMA", "P2P/IPC/read", "NET/IB/GDRDMA/Shared"});
}

TEST_CASE("NCCL's debug log: two nodes over TCP sockets (NCCL 2.18), shared memory within a node") {
    const auto t = transport_of("two-nodes-socket.log");
    CHECK(t["network"] == "Socket");
    CHECK(t["gdr"] == false);
    CHECK(t["channels_via"] == nlohmann::json{"NET/Socket", "SHM/direct/direct"});
}

TEST_CASE("NCCL's debug log: an external NET plugin") {
    const auto t = transport_of("plugin-libfabric.log");
    CHECK(t["network"] == "Libfabric");
    CHECK(t["net_plugin"] == "libnccl-net-ofi.so");
    CHECK(t["gdr"] == true);
    CHECK(t["channels_via"] == nlohmann::json{"P2P/CUMEM/read", "NET/Libfabric/GDRDMA"});
}

TEST_CASE("NCCL's debug log: what it says when the lines are few, old or not INFO") {
    const auto empty = nccl::transport_from_log("");
    CHECK(empty["network"].is_null());
    CHECK(empty["gdr"].is_null());
    CHECK(empty["channels_via"] == nlohmann::json::array());
    CHECK(empty["source"] == "NCCL debug log");

    // Without "Using network": the plugin's name, else the built-in network that found devices.
    CHECK(nccl::transport_from_log("h:1:2 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v8 (v8)\n")["network"] ==
          "NCCL RDMA Plugin v8");
    CHECK(nccl::transport_from_log("h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
                                   "h:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n")["network"] == "IB");
    // Only the NICs' GPUDirect RDMA: what NCCL found there.
    CHECK(nccl::transport_from_log("h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\r\n")["gdr"] == false);
    // Device and rank numbers are left out of the transport's name; Windows line ends and
    // warnings change nothing.
    const auto t = nccl::transport_from_log(
        "h:1:2 [0] NCCL INFO Channel 02/0 : 0[0] -> 3[3] via P2P/indirect/1[1]\r\n"
        "h:1:2 [0] NCCL INFO Channel 03/1 : 0[0] -> 4[0] [send] via NET/IB/2(1)/GDRDMA(PCI)\r\n"
        "h:1:2 [0] NCCL WARN Channel 04/0 : 0[0] -> 1[1] via SHM/direct/direct\n"
        "h:1:2 [0] NCCL INFO Channel 00/02 :    0   1\n"
        "Using network Socket\n");
    CHECK(t["channels_via"] == nlohmann::json{"P2P/indirect", "NET/IB/GDRDMA(PCI)"});
    CHECK(t["gdr"] == true);
    CHECK(t["network"].is_null());
}

} // TEST_SUITE("nccl")
