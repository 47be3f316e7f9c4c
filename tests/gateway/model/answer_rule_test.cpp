// Which answers are kept: release_on, success_when and the release header, row by row
// (docs/configuration.md, "Which answers are kept"), the config that writes them, and the
// optional placeholders that tell notifications apart (docs/gateway.md, "Keys built from the request").
#include "gateway/model/answer_rule.h"

#include <gtest/gtest.h>

#include "gateway/model/config/config.h"
#include "gateway/model/key_template.h"
#include "gateway/model/test_request.h"

namespace idem::gateway {
namespace {

Policy policy_of(std::string_view rule) {
  const std::string yaml = "defaults:\n  " + std::string(rule) + "\n";
  return load_config_text(yaml, "idem.yaml").defaults;
}

bool releases(const Policy& p, unsigned status, std::optional<std::string_view> body, bool asked = false) {
  return releases_answer(p.release_on, p.success_when, {status, body, asked});
}

std::string config_error(std::string_view yaml) {
  try {
    (void)load_config_text(yaml, "idem.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(AnswerRule, NoRulesKeepEveryAnswerTheDefaultsKeep) {
  const Policy p;
  for (unsigned status : {200u, 201u, 204u, 400u, 401u, 404u})
    EXPECT_FALSE(releases(p, status, "x")) << status;
}

TEST(AnswerRule, ReleaseOnNamesStatuses) {
  const Policy p = policy_of("release_on: [400, 401, 403]");
  EXPECT_EQ(p.release_on, (std::vector<unsigned>{400, 401, 403}));
  EXPECT_TRUE(releases(p, 400, "bad sign"));
  EXPECT_TRUE(releases(p, 403, std::nullopt));
  EXPECT_FALSE(releases(p, 404, "x"));
  EXPECT_FALSE(releases(p, 200, "x"));
  EXPECT_EQ(policy_of("release_on: 422").release_on, (std::vector<unsigned>{422}));
}

TEST(AnswerRule, TheReleaseHeaderReleasesWhateverTheStatus) {
  const Policy p;
  for (unsigned status : {200u, 201u, 404u}) EXPECT_TRUE(releases(p, status, "x", true)) << status;
}

TEST(AnswerRule, JsonMemberComparedAsExactValues) {
  const Policy p = policy_of(R"(success_when: { json: code, equals: [0, 200, "0"] })");
  EXPECT_EQ(p.success_when.values, (std::vector<std::string>{"0", "200", "\"0\""}));
  for (std::string_view kept : {R"({"code":0})", R"({"code":0.0,"msg":"x"})", R"({"code":2e2})",
                                R"({"code":"0"})", R"( {"msg":"成功", "code":200} )"})
    EXPECT_FALSE(releases(p, 200, kept)) << kept;
  for (std::string_view released :
       {R"({"code":500})", R"({"code":"200"})", R"({"code":200.0000000000000000001})", R"({"code":null})",
        R"({"msg":"x"})", R"([0])", "0", "not json", "", R"({"code":0,"code":0})"})
    EXPECT_TRUE(releases(p, 200, released)) << released;
  // Only 2xx answers are judged, and only a body the gateway holds.
  EXPECT_FALSE(releases(p, 404, R"({"code":404})"));
  EXPECT_FALSE(releases(p, 201, std::nullopt));
}

TEST(AnswerRule, NestedMembersBooleansAndBigNumbers) {
  const Policy flag = policy_of("success_when: { json: data.success, equals: true }");
  EXPECT_FALSE(releases(flag, 200, R"({"data":{"success":true}})"));
  EXPECT_TRUE(releases(flag, 200, R"({"data":{"success":"true"}})"));
  EXPECT_TRUE(releases(flag, 200, R"({"success":true})"));
  const Policy indexed = policy_of("success_when: { json: results.0.status, equals: [OK] }");
  EXPECT_FALSE(releases(indexed, 200, R"({"results":[{"status":"OK"}]})"));
  EXPECT_TRUE(releases(indexed, 200, R"({"results":[{"status":"FAIL"}]})"));
  // Snowflake ids: 19 digits, beyond a double's exact range.
  const Policy big = policy_of("success_when: { json: id, equals: [1790000000000000001] }");
  EXPECT_FALSE(releases(big, 200, R"({"id":1790000000000000001})"));
  EXPECT_TRUE(releases(big, 200, R"({"id":1790000000000000000})"));
}

TEST(AnswerRule, TextComparesTheWholeBody) {
  const Policy p = policy_of("success_when: { text: success }");
  EXPECT_FALSE(releases(p, 200, "success"));
  EXPECT_FALSE(releases(p, 200, "success\r\n"));
  EXPECT_TRUE(releases(p, 200, "fail"));
  EXPECT_TRUE(releases(p, 200, "successful"));
  EXPECT_TRUE(releases(p, 200, "SUCCESS"));
  EXPECT_FALSE(releases(policy_of("success_when: { text: [success, ok] }"), 200, "ok"));
}

TEST(AnswerRule, ARouteOverridesTheDefaults) {
  const Config c = load_config_text(R"(defaults:
  success_when: { json: code, equals: [0] }
routes:
  - name: a
    match: { method: POST, path: /a }
  - name: b
    match: { method: POST, path: /b }
    success_when: { text: success }
    release_on: [400]
)",
                                    "idem.yaml");
  EXPECT_EQ(c.routes[0].policy.success_when.kind, SuccessRule::Kind::json);
  EXPECT_TRUE(c.routes[0].policy.release_on.empty());
  EXPECT_EQ(c.routes[1].policy.success_when.kind, SuccessRule::Kind::text);
  EXPECT_EQ(c.routes[1].policy.release_on, (std::vector<unsigned>{400}));
}

TEST(AnswerRule, ConfigErrorsNameTheLineAndKey) {
  EXPECT_EQ(config_error("defaults:\n  release_on: [400, 99]\n"),
            "idem.yaml:2: defaults.release_on[1]: expected a whole number from 200 to 599, got '99'");
  EXPECT_EQ(config_error("defaults:\n  release_on: []\n"), "idem.yaml:2: defaults.release_on: an empty list");
  EXPECT_EQ(
      config_error("defaults:\n  success_when: { json: code }\n"),
      "idem.yaml:2: defaults.success_when.json: json needs equals: the member's values that mean success, "
      "such as [0, 200]");
  EXPECT_EQ(config_error("defaults:\n  success_when: { equals: [0] }\n"),
            "idem.yaml:2: defaults.success_when: expected json (with equals) or text");
  EXPECT_EQ(
      config_error("defaults:\n  success_when: { text: success, equals: [0] }\n"),
      "idem.yaml:2: defaults.success_when.text: text is a rule of its own: give either text, or json with "
      "equals");
  EXPECT_EQ(config_error("defaults:\n  success_when: { json: a..b, equals: [0] }\n"),
            "idem.yaml:2: defaults.success_when.json: 'a..b' has an empty member name");
  EXPECT_EQ(config_error("defaults:\n  success_when: { json: code, equals: [1e9999999999999999999] }\n")
                .starts_with("idem.yaml:2: defaults.success_when.equals[0]: "),
            true);
  EXPECT_EQ(config_error("defaults:\n  success_when: { json: code, equals: [0], status: 1 }\n"),
            "idem.yaml:2: defaults.success_when.status: unknown key (expected one of: json, equals, text)");
}

TEST(AnswerRule, SuccessValuesAsAConfigWritesThem) {
  EXPECT_EQ(*success_value("0", false), "0");
  EXPECT_EQ(*success_value("1.50", false), "1.5");
  EXPECT_EQ(*success_value("0", true), "\"0\"");
  EXPECT_EQ(*success_value("true", false), "true");
  EXPECT_EQ(*success_value("true", true), "\"true\"");
  EXPECT_EQ(*success_value("OK", false), "\"OK\"");
  EXPECT_EQ(*success_value("2026-12-05", false), "\"2026-12-05\"");
}

// docs/recipes/alipay.md, "Refunds": a payment and its partial refunds, one key each.
TEST(OptionalPlaceholder, RendersNothingWhenAbsent) {
  Result<KeyTemplate> t = KeyTemplate::parse("alipay:{form.out_trade_no}:{form.out_biz_no?}");
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->parts()[3].optional);
  EXPECT_EQ(t->parts()[3].name, "out_biz_no");
  const auto render = [&](std::string body) {
    testing::TestRequest req;
    req.header("Content-Type", "application/x-www-form-urlencoded");
    req.body = std::move(body);
    RequestContext ctx(req.view(), {}, "");
    ProblemOr<std::string> key = render_key(*t, ctx);
    return key ? *key : "<" + std::string(problem_name(key.problem())) + ">";
  };
  EXPECT_EQ(render("out_trade_no=T1&trade_status=TRADE_SUCCESS"), "alipay:T1:");
  EXPECT_EQ(render("out_trade_no=T1&out_biz_no="), "alipay:T1:");
  EXPECT_EQ(render("out_trade_no=T1&out_biz_no=R1"), "alipay:T1:R1");
  EXPECT_EQ(render("out_biz_no=R1"), "<key-missing>");
  EXPECT_EQ(render("out_trade_no=T1&out_biz_no=R1&out_biz_no=R2"), "<request-ambiguous>");
}

TEST(OptionalPlaceholder, AKeyNeedsOneRequiredPlaceholder) {
  EXPECT_EQ(
      config_error("routes:\n  - name: a\n    match: { method: POST, path: /a }\n    key: \"a:{form.x?}\"\n"),
      "idem.yaml:4: routes[0].key: every placeholder is optional, so requests without those fields would all "
      "have one key: make one of them required (no '?')");
}

}  // namespace
}  // namespace idem::gateway
