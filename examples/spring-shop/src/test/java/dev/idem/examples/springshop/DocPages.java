package dev.idem.examples.springshop;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The console and sh blocks of a Markdown page that tests/docs/doc_commands_test.py leaves to this
 * module ({@code <!-- doc-test: skip run by examples/spring-shop's DocsTest ... -->}), run by the
 * same conventions (docs/README.md, "How the examples are tested"): one bash session per page,
 * {@code $ } commands (a trailing backslash continues one) each followed by the output it must
 * print, {@code ...} on a line of its own for any lines, {@code …} for any text within a line;
 * 127.0.0.1:8080 is the shop's port.
 */
final class DocPages {
  private static final Pattern DIRECTIVE = Pattern.compile("^<!--\\s*doc-test:\\s*(\\w+)\\s*(.*?)\\s*-->\\s*$");
  private static final Pattern FENCE = Pattern.compile("^(\\s*)```\\s*([\\w.+-]*)\\s*$");
  private static final String SEPARATOR = "\u001edoc-test-end\u001e";
  static final String MARK = "examples/spring-shop's DocsTest";

  record Block(String lang, int line, String text) {}

  /** The blocks of {@code page} marked for this test. */
  static List<Block> blocks(Path page) throws IOException {
    List<String> lines = Files.readAllLines(page, StandardCharsets.UTF_8);
    List<Block> out = new ArrayList<>();
    String directive = null;
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      Matcher d = DIRECTIVE.matcher(line.strip());
      if (d.matches()) {
        directive = d.group(1) + " " + d.group(2);
        continue;
      }
      Matcher f = FENCE.matcher(line);
      if (f.matches()) {
        String indent = f.group(1), lang = f.group(2);
        int start = i + 1;
        StringBuilder body = new StringBuilder();
        for (i++; i < lines.size() && !lines.get(i).strip().equals("```"); i++)
          body.append(lines.get(i).startsWith(indent) ? lines.get(i).substring(indent.length()) : lines.get(i)).append('\n');
        if ((lang.equals("console") || lang.equals("sh")) && directive != null && directive.startsWith("skip ")
            && directive.contains(MARK))
          out.add(new Block(lang, start, body.toString()));
        directive = null;
        continue;
      }
      if (!line.isBlank()) directive = null;
    }
    return out;
  }

  /** [command, expected lines] of a console block. */
  static List<String[]> commands(String text) {
    List<String[]> out = new ArrayList<>();
    String[] lines = text.split("\n", -1);
    StringBuilder expected = null;
    String cmd = null;
    for (int i = 0; i < lines.length; i++) {
      String line = lines[i];
      if (line.startsWith("$ ")) {
        if (cmd != null) out.add(new String[] {cmd, expected.toString()});
        StringBuilder c = new StringBuilder(line.substring(2));
        while (c.toString().endsWith("\\") && i + 1 < lines.length) c.append('\n').append(lines[++i]);
        cmd = c.toString();
        expected = new StringBuilder();
      } else if (cmd != null) {
        expected.append(line).append('\n');
      }
    }
    if (cmd != null) out.add(new String[] {cmd, expected.toString()});
    return out;
  }

  static List<String> trim(List<String> lines) {
    List<String> out = new ArrayList<>();
    for (String l : lines) out.add(l.stripTrailing());
    while (!out.isEmpty() && out.get(out.size() - 1).isEmpty()) out.remove(out.size() - 1);
    while (!out.isEmpty() && out.get(0).isEmpty()) out.remove(0);
    return out;
  }

  static boolean lineMatches(String pattern, String line) {
    StringBuilder regex = new StringBuilder();
    for (String part : pattern.split("…", -1)) {
      if (regex.length() > 0) regex.append(".*?");
      regex.append(Pattern.quote(part));
    }
    return Pattern.compile(regex.toString(), Pattern.DOTALL).matcher(line).matches();
  }

  static boolean linesMatch(List<String> expected, List<String> actual) {
    Boolean[][] memo = new Boolean[expected.size() + 1][actual.size() + 1];
    return match(expected, actual, 0, 0, memo);
  }

  private static boolean match(List<String> e, List<String> a, int i, int j, Boolean[][] memo) {
    if (memo[i][j] != null) return memo[i][j];
    boolean ok;
    if (i == e.size()) ok = j == a.size();
    else if (e.get(i).equals("...")) {
      ok = false;
      for (int k = j; k <= a.size() && !ok; k++) ok = match(e, a, i + 1, k, memo);
    } else ok = j < a.size() && lineMatches(e.get(i), a.get(j)) && match(e, a, i + 1, j + 1, memo);
    memo[i][j] = ok;
    return ok;
  }

  /** One page's shell: variables and functions kept from block to block (.state in {@code dir}). */
  static final class Session {
    private final Path dir;
    private final int port;

    Session(Path dir, int port) {
      this.dir = dir;
      this.port = port;
    }

    private String real(String text) {
      return text.replaceAll("(127\\.0\\.0\\.1|localhost):8080\\b", "$1:" + port);
    }

    private String doc(String text) {
      return text.replaceAll("(127\\.0\\.0\\.1|localhost):" + port + "\\b", "$1:8080");
    }

    /** Runs a block; null, or what went wrong. */
    String run(Block b) throws IOException, InterruptedException {
      if (b.lang().equals("sh")) {
        Result r = bash(real(b.text()));
        return r.status == 0 ? null : "exited " + r.status + ":\n" + doc(r.output);
      }
      List<String[]> cmds = commands(b.text());
      StringBuilder script = new StringBuilder("__base=$(compgen -v)\n[ -f .state ] && source .state 2>/dev/null\nexec 2>&1\n");
      for (String[] c : cmds) script.append(real(c[0])).append('\n').append("printf '\\n%s\\n' '").append(SEPARATOR).append("'\n");
      script.append("wait\n{ declare -f; for __v in $(comm -13 <(echo \"$__base\" | sort) <(compgen -v | sort)); do"
          + " [ \"$__v\" = __base ] || declare -p \"$__v\"; done; } > .state 2>/dev/null\n");
      Result r = bash(script.toString());
      String[] outputs = doc(r.output.replace("\r", "")).split("\n" + Pattern.quote(SEPARATOR) + "\n", -1);
      StringBuilder problems = new StringBuilder();
      for (int n = 0; n < cmds.size(); n++) {
        String actual = n < outputs.length ? outputs[n] : "<no output: the shell ended early>";
        List<String> want = trim(List.of(cmds.get(n)[1].split("\n", -1)));
        List<String> got = trim(List.of(actual.split("\n", -1)));
        if (!linesMatch(want, got))
          problems.append("$ ").append(cmds.get(n)[0]).append("\n--- expected:\n").append(String.join("\n", want))
              .append("\n--- got:\n").append(String.join("\n", got)).append('\n');
      }
      return problems.length() == 0 ? null : problems.toString();
    }

    private record Result(int status, String output) {}

    private Result bash(String script) throws IOException, InterruptedException {
      Process p = new ProcessBuilder("bash", "-c", script).directory(dir.toFile()).redirectErrorStream(true).start();
      p.getOutputStream().close();
      byte[] out = p.getInputStream().readAllBytes();
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return new Result(-1, "timed out after 30 s");
      }
      return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
    }
  }
}
