#pragma once
// A small JSON Schema checker for the keywords reports/report.schema.json uses: type,
// required, properties, additionalProperties, propertyNames, items, enum, const, pattern,
// minimum, exclusiveMinimum, minItems, maxItems and local $ref. Returns the violations.
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace interopbench::testing {

class SchemaCheck {
public:
    explicit SchemaCheck(nlohmann::json schema) : m_root(std::move(schema)) {}

    static SchemaCheck from_file(const std::string& path) {
        std::ifstream in(path);
        return SchemaCheck(nlohmann::json::parse(in));
    }

    std::vector<std::string> errors(const nlohmann::json& doc) const {
        std::vector<std::string> out;
        check(m_root, doc, "$", out);
        return out;
    }

private:
    static bool has_type(const nlohmann::json& v, const std::string& t) {
        if (t == "object") return v.is_object();
        if (t == "array") return v.is_array();
        if (t == "string") return v.is_string();
        if (t == "integer") return v.is_number_integer();
        if (t == "number") return v.is_number();
        if (t == "boolean") return v.is_boolean();
        if (t == "null") return v.is_null();
        return false;
    }

    void check(const nlohmann::json& s, const nlohmann::json& v, const std::string& at, std::vector<std::string>& out) const {
        if (s.contains("$ref")) {
            const std::string ref = s["$ref"];
            const std::string name = ref.substr(ref.rfind('/') + 1);
            check(m_root["$defs"][name], v, at, out);
            return;
        }
        if (s.contains("type")) {
            bool ok = false;
            if (s["type"].is_array()) {
                for (const auto& t : s["type"]) ok = ok || has_type(v, t);
            } else {
                ok = has_type(v, s["type"]);
            }
            if (!ok) {
                out.push_back(at + ": wrong type, want " + s["type"].dump());
                return;
            }
        }
        if (s.contains("const") && v != s["const"]) out.push_back(at + ": must be " + s["const"].dump());
        if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end())
            out.push_back(at + ": " + v.dump() + " not in " + s["enum"].dump());
        if (s.contains("pattern") && v.is_string() && !std::regex_search(v.get<std::string>(), std::regex(s["pattern"].get<std::string>())))
            out.push_back(at + ": does not match " + s["pattern"].get<std::string>());
        if (s.contains("minimum") && v.is_number() && v.get<double>() < s["minimum"].get<double>())
            out.push_back(at + ": below minimum");
        if (s.contains("exclusiveMinimum") && v.is_number() && v.get<double>() <= s["exclusiveMinimum"].get<double>())
            out.push_back(at + ": not above exclusive minimum");
        if (v.is_array()) {
            if (s.contains("minItems") && v.size() < s["minItems"].get<std::size_t>()) out.push_back(at + ": too few items");
            if (s.contains("maxItems") && v.size() > s["maxItems"].get<std::size_t>()) out.push_back(at + ": too many items");
            if (s.contains("items"))
                for (std::size_t i = 0; i < v.size(); ++i) check(s["items"], v[i], at + "[" + std::to_string(i) + "]", out);
        }
        if (v.is_object()) {
            if (s.contains("required"))
                for (const auto& r : s["required"])
                    if (!v.contains(r.get<std::string>())) out.push_back(at + ": missing " + r.get<std::string>());
            for (const auto& [k, item] : v.items()) {
                if (s.contains("propertyNames") && s["propertyNames"].contains("pattern") &&
                    !std::regex_search(k, std::regex(s["propertyNames"]["pattern"].get<std::string>())))
                    out.push_back(at + ": property name " + k + " not allowed");
                if (s.contains("properties") && s["properties"].contains(k))
                    check(s["properties"][k], item, at + "." + k, out);
                else if (s.contains("additionalProperties") && s["additionalProperties"].is_object())
                    check(s["additionalProperties"], item, at + "." + k, out);
            }
        }
    }

    nlohmann::json m_root;
};

} // namespace interopbench::testing
