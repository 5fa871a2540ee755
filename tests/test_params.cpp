#include <doctest/doctest.h>

#include "interopbench/errors.hpp"
#include "interopbench/params.hpp"

using namespace interopbench;

TEST_CASE("parse_size accepts bytes and binary units") {
    CHECK(parse_size("4096") == 4096);
    CHECK(parse_size("4K") == 4096);
    CHECK(parse_size("4k") == 4096);
    CHECK(parse_size("64KiB") == 65536);
    CHECK(parse_size("1M") == 1048576);
    CHECK(parse_size("2G") == 2147483648ull);
    CHECK(parse_size("1T") == 1099511627776ull);
    CHECK(parse_size(" 8B ") == 8);
}

TEST_CASE("parse_size rejects bad sizes with a hint") {
    for (const char* bad : {"0", "-1", "12Q", "", "1.5G", "G", "99999999999999999999", "16777216T"}) {
        CAPTURE(bad);
        try {
            parse_size(bad);
            FAIL("accepted");
        } catch (const UsageError& e) {
            CHECK(std::string(e.what()).find("invalid size") != std::string::npos);
            CHECK_FALSE(e.hint().empty());
        }
    }
}

TEST_CASE("format_size round-trips through parse_size") {
    CHECK(format_size(4096) == "4KiB");
    CHECK(format_size(1536) == "1536B");
    CHECK(format_size(1ull << 30) == "1GiB");
    for (std::uint64_t v : {1ull, 1000ull, 4096ull, 3ull << 20, 1ull << 40}) CHECK(parse_size(format_size(v)) == v);
}

TEST_CASE("size lists and ranges") {
    CHECK(parse_size_list("4K:64K") == std::vector<std::uint64_t>{4096, 8192, 16384, 32768, 65536});
    CHECK(parse_size_list("4K:1G:x4").size() == 10);
    CHECK(parse_size_list("4K:1G:x4").back() == (1ull << 30));
    CHECK(parse_size_list("1K:4K:+1K") == std::vector<std::uint64_t>{1024, 2048, 3072, 4096});
    CHECK(parse_size_list("1M,4K") == std::vector<std::uint64_t>{1048576, 4096});
    CHECK(parse_size_list("5:20:x4") == std::vector<std::uint64_t>{5, 20});
    CHECK_THROWS_AS(parse_size_list("1G:4K"), UsageError);
    CHECK_THROWS_AS(parse_size_list("4K:1G:x1"), UsageError);
    CHECK_THROWS_AS(parse_size_list("4K:1G:y2"), UsageError);
    CHECK_THROWS_AS(parse_size_list("1:1M:+1"), UsageError); // too many values
    CHECK_THROWS_AS(parse_size_list(""), UsageError);
    try {
        parse_size_list("1G:4K");
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()).find("start is larger") != std::string::npos);
        CHECK(e.hint().find("4KiB:1GiB") != std::string::npos);
    }
}

TEST_CASE("Params keep order and canonical text") {
    Params p;
    p.set("size", "4096");
    p.set("host_mem", "pinned");
    p.set_number("size", 8192);
    CHECK(p.canonical() == "size=8192,host_mem=pinned");
    CHECK(p.get_uint("size") == 8192);
    CHECK(p.find("nope") == std::nullopt);
    // Text-only values (as read back from a report) hold no typed value; typed ones keep it.
    CHECK_THROWS_AS(p.get_uint("host_mem"), ConfigError);
    p.set_pair("pair", {0, 1});
    CHECK(p.get("pair") == "0>1");
    CHECK(p.pair("pair") == DevicePair{0, 1});
    const std::vector<std::pair<std::string, std::string>> text{{"size", "4096"}};
    CHECK(Params(text).find_number("size") == std::nullopt);
}

TEST_CASE("glob and edit distance") {
    CHECK(glob_match("h2d*", "h2d_copy"));
    CHECK(glob_match("*copy", "d2h_copy"));
    CHECK(glob_match("?2d_copy", "h2d_copy"));
    CHECK_FALSE(glob_match("h2d", "h2d_copy"));
    CHECK(edit_distance("h2d_cpy", "h2d_copy") == 1);
    CHECK(split_list(" a, b,,c ") == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("edit distance counts a swap of neighbours once, and closest_match suggests only near names") {
    CHECK(edit_distance("", "") == 0);
    CHECK(edit_distance("run", "") == 3);
    CHECK(edit_distance("rnu", "run") == 1); // swapped neighbours
    CHECK(edit_distance("rn", "run") == 1);
    CHECK(edit_distance("ouput", "out") == 2);
    CHECK(edit_distance("kitten", "sitting") == 3);
    const std::vector<std::string> commands{"run", "list", "show", "topo", "doctor", "compare", "version"};
    CHECK(closest_match("rn", commands) == "run");
    CHECK(closest_match("rnu", commands) == "run");
    CHECK(closest_match("lsit", commands) == "list");
    CHECK(closest_match("docter", commands) == "doctor");
    CHECK(closest_match("comapre", commands) == "compare");
    CHECK_FALSE(closest_match("x", commands));          // one letter is no typo of anything
    CHECK_FALSE(closest_match("benchmark", commands));  // far from every name
    CHECK_FALSE(closest_match("rn", {}));
    CHECK(closest_match("ouput", {"out", "html", "format"}) == "out");
    // Long names allow a third of their length: 3 edits in 13 letters.
    CHECK(closest_match("host_mmeory_x", {"host_memory"}) == "host_memory");
    CHECK(closest_match("thread", {"threads", "chunk"}) == "threads");
}
