// The operator's page as embedded in the binary (docs/admin.md, "The operator's page").
#include "gateway/admin/ui_assets.h"

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace idem::gateway {
namespace {

std::string source_file(const std::string& name) {
  std::ifstream in(std::string(IDEM_UI_DIR) + "/" + name, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(UiAssets, ThePageAndItsFilesAreTheSourceTreesBytes) {
  auto page = find_ui_asset("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->content_type, "text/html; charset=utf-8");
  EXPECT_EQ(page->body, source_file("index.html"));
  EXPECT_FALSE(page->body.empty());
  auto same = find_ui_asset("/ui/index.html");
  ASSERT_TRUE(same);
  EXPECT_EQ(same->body, page->body);
  auto js = find_ui_asset("/ui/app.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(js->body, source_file("app.js"));
  auto css = find_ui_asset("/ui/style.css");
  ASSERT_TRUE(css);
  EXPECT_EQ(css->content_type, "text/css; charset=utf-8");
  EXPECT_EQ(css->body, source_file("style.css"));
  EXPECT_EQ(ui_files().size(), 3u);
}

TEST(UiAssets, NothingElseIsServed) {
  for (const char* path :
       {"", "/ui", "/ui/", "/index.html", "/app.js", "/ui/nope.js", "/ui/../ui/app.js", "/ui//app.js",
        "/UI/app.js", "/ui/app.js/", "/ui/app.JS", "/ui/app", "/ui/%61pp.js", "//", "/v1/records"})
    EXPECT_FALSE(find_ui_asset(path)) << path;
}

// The page runs under Content-Security-Policy default-src 'self': a script or style
// written inline would not run, and would show the policy is not needed.
TEST(UiAssets, NoInlineScriptOrStyle) {
  const std::string html(find_ui_asset("/")->body);
  for (std::size_t at = html.find("<script"); at != std::string::npos; at = html.find("<script", at + 1)) {
    const std::size_t end = html.find('>', at);
    EXPECT_NE(html.substr(at, end - at).find(" src="), std::string::npos) << html.substr(at, 80);
    EXPECT_EQ(html.compare(end, 10, "></script>"), 0) << html.substr(at, 80);
  }
  for (const char* inline_code : {"<style", " style=", " onclick=", " onload=", "javascript:"})
    EXPECT_EQ(html.find(inline_code), std::string::npos) << inline_code;
}

// Keys and scopes come from clients: the script sets text, never markup.
TEST(UiAssets, TheScriptNeverWritesMarkup) {
  const std::string js(find_ui_asset("/ui/app.js")->body);
  for (const char* sink : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                           "new Function", "setAttribute('on", "createContextualFragment"})
    EXPECT_EQ(js.find(sink), std::string::npos) << sink;
  EXPECT_NE(js.find("textContent"), std::string::npos);
}

}  // namespace
}  // namespace idem::gateway
