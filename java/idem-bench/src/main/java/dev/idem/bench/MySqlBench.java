package dev.idem.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.CommitArgs;
import dev.idem.core.ProtocolFile;
import dev.idem.jdbc.JdbcStore;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * begin+commit pairs on MySQL/MariaDB ($IDEM_BENCH_MYSQL_URL, mysql://user:pass@host:port/db): the
 * Java engine, and a plain JDBC loop of the same protocol/mysql statements (each operation a
 * transaction: START TRANSACTION, the statements, COMMIT; each statement under the engine's timeout),
 * on the same pool.
 */
@State(Scope.Benchmark)
public class MySqlBench {
  static final String PREFIX = "idem_bench_";
  // As JdbcStore rounds its timeout for the driver: whole seconds, up, at least 1.
  static final int QUERY_TIMEOUT_SECONDS =
      (int) Math.max(1, (JdbcStore.Options.defaults().timeout().toMillis() + 999) / 1000);
  HikariDataSource ds;
  JdbcStore store;
  List<String> begin, commit;
  final AtomicLong next = new AtomicLong();
  final String run = UUID.randomUUID().toString().substring(0, 8);
  static final byte[] RESULT = "J\u0011\u0000\u0000\u0000{\"order_id\":4217}".getBytes(StandardCharsets.ISO_8859_1);

  @Setup(Level.Trial)
  public void open() {
    URI u = URI.create(System.getenv().getOrDefault("IDEM_BENCH_MYSQL_URL", "mysql://idem:idem@127.0.0.1:13306/idem"));
    String[] user = u.getUserInfo().split(":", 2);
    HikariConfig c = new HikariConfig();
    c.setJdbcUrl("jdbc:mariadb://" + u.getHost() + ":" + u.getPort() + u.getPath());
    c.setUsername(user[0]);
    c.setPassword(user[1]);
    c.setMaximumPoolSize(32);
    c.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
    ds = new HikariDataSource(c);
    store = JdbcStore.mysql(ds, JdbcStore.Options.defaults().withTablePrefix(PREFIX));
    String now = ProtocolFile.body(JdbcStore.class, "mysql/now.sql");
    begin = statements("begin", now);
    commit = statements("commit", now);
  }

  private static List<String> statements(String op, String now) {
    String body = ProtocolFile.expand(ProtocolFile.body(JdbcStore.class, "mysql/" + op + ".sql"), PREFIX, now, 3600000000L);
    List<String> out = new ArrayList<>();
    for (String s : body.split(";\\s*\\n")) if (!s.isBlank()) out.add(s.replaceAll(";\\s*$", "").replaceAll("\\$(\\d)", "?$1"));
    return out;
  }

  @TearDown(Level.Trial)
  public void close() throws SQLException {
    // A shared server: this run's records go, and those earlier runs left to expire.
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement("DELETE FROM " + PREFIX + "records WHERE `key` LIKE ? OR `key` LIKE ?")) {
      ps.setBytes(1, bytes("bench-" + run + "-%"));
      ps.setBytes(2, bytes("plain-" + run + "-%"));
      ps.executeUpdate();
    }
    store.sweep();
    ds.close();
  }

  @Benchmark
  public Object engineBeginCommit() {
    String key = "bench-" + run + "-" + next.incrementAndGet();
    BeginOutcome.Acquired a = (BeginOutcome.Acquired) store.begin(
        new BeginArgs("s", key, null, Duration.ofSeconds(30), Duration.ofSeconds(60)));
    return store.commit(new CommitArgs("s", key, a.fence(), RESULT, Duration.ofSeconds(60)));
  }

  /** The same statements by hand: what any JDBC code sending them would cost. */
  @Benchmark
  public Object plainJdbcBeginCommit() throws SQLException {
    String key = "plain-" + run + "-" + next.incrementAndGet();
    long fence;
    Object[] b = {bytes("s"), bytes(key), new byte[0], 30_000_000L, 60_000_000L, new byte[0]};
    try (Connection c = ds.getConnection()) {
      fence = run(c, begin, b);
    }
    Object[] m = {bytes("s"), bytes(key), fence, 60_000_000L, RESULT, new byte[0], 0L};
    try (Connection c = ds.getConnection()) {
      return run(c, commit, m);
    }
  }

  private static long run(Connection c, List<String> sqls, Object[] args) throws SQLException {
    try (Statement st = c.createStatement()) {
      st.execute("START TRANSACTION");
    }
    long answer = 0;
    for (int i = 0; i < sqls.size(); i++) {
      String sql = sqls.get(i);
      List<Integer> order = new ArrayList<>();
      java.util.regex.Matcher mm = java.util.regex.Pattern.compile("\\?(\\d)").matcher(sql);
      while (mm.find()) order.add(Integer.parseInt(mm.group(1)));
      try (PreparedStatement ps = c.prepareStatement(sql.replaceAll("\\?\\d", "?"))) {
        // The engine bounds each statement by its store timeout (JdbcStore.Options#timeout, 5 s by
        // default; the driver sends it as SET STATEMENT max_statement_time=5 FOR ...): so does this.
        ps.setQueryTimeout(QUERY_TIMEOUT_SECONDS);
        for (int p = 0; p < order.size(); p++) {
          Object v = args[order.get(p) - 1];
          if (v instanceof byte[] bb) ps.setBytes(p + 1, bb);
          else ps.setLong(p + 1, (Long) v);
        }
        if (i == sqls.size() - 1 && ps.execute()) {
          try (ResultSet rs = ps.getResultSet()) {
            if (rs.next() && rs.getMetaData().getColumnCount() > 1) answer = rs.getLong(2);
          }
        } else {
          ps.execute();
        }
      }
    }
    try (Statement st = c.createStatement()) {
      st.execute("COMMIT");
    }
    return answer;
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
