package dev.idem.examples.springshop;

import java.security.SecureRandom;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.function.Supplier;
import org.springframework.core.io.ClassPathResource;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

/** The shop's database: transactions (a deadlock or lock timeout runs one again), counters, ids. */
@Component
public class Db {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final String ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

  final JdbcTemplate jdbc;
  private final TransactionTemplate tx;

  public Db(JdbcTemplate jdbc, PlatformTransactionManager transactions, ShopProperties props) throws java.io.IOException {
    this.jdbc = jdbc;
    this.tx = new TransactionTemplate(transactions);
    tx.setIsolationLevel(TransactionDefinition.ISOLATION_READ_COMMITTED);
    createSchema();
    if (props.seed() != null) for (String s : props.seed()) seed(s);
  }

  /** SKU=STOCK[@PRICE]: created, or reset to that stock. */
  private void seed(String spec) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("([^=]+)=(\\d+)(?:@(\\d+))?").matcher(spec.trim());
    if (!m.matches()) throw new IllegalArgumentException("shop.seed: SKU=STOCK[@PRICE] expected, got " + spec);
    long stock = Long.parseLong(m.group(2)), price = m.group(3) == null ? 1999 : Long.parseLong(m.group(3));
    jdbc.update("INSERT INTO t_sku (sku_id, stock, version, price, initial_stock) VALUES (?, ?, 0, ?, ?) "
        + "ON DUPLICATE KEY UPDATE stock = ?, version = 0, price = ?, initial_stock = ?", m.group(1), stock, price, stock,
        stock, price, stock);
  }

  /** The tables, as shop-storm creates them; MySQL commits each CREATE, so a named lock serializes processes. */
  private void createSchema() throws java.io.IOException {
    String sql = new String(new ClassPathResource("schema-mysql.sql").getInputStream().readAllBytes(),
        java.nio.charset.StandardCharsets.UTF_8);
    jdbc.execute((java.sql.Connection c) -> {
      try (var st = c.createStatement()) {
        st.execute("SELECT GET_LOCK(LEFT(CONCAT('shop.schema.', DATABASE()), 64), 30)");
        try {
          for (String stmt : sql.replaceAll("(?m)^--.*$", "").split(";")) {
            if (!stmt.isBlank()) st.execute(stmt);
          }
        } finally {
          st.execute("SELECT RELEASE_LOCK(LEFT(CONCAT('shop.schema.', DATABASE()), 64))");
        }
      }
      return null;
    });
  }

  /** Runs {@code work} in a READ COMMITTED transaction; a deadlock or lock timeout runs it again (up to 5 times). */
  public <T> T inTransaction(Supplier<T> work) {
    for (int i = 0; ; i++) {
      try {
        return tx.execute(s -> work.get());
      } catch (PessimisticLockingFailureException e) {
        if (i >= 4) throw e;
      }
    }
  }

  /** Counts in t_stats, in the caller's transaction. */
  public void count(String name) {
    jdbc.update("INSERT INTO t_stats (name, n) VALUES (?, 1) ON DUPLICATE KEY UPDATE n = n + 1", name);
  }

  public static long nowMicros() {
    Instant now = Instant.now();
    return ChronoUnit.MICROS.between(Instant.EPOCH, now);
  }

  public static String randomId(int length) {
    StringBuilder b = new StringBuilder(length);
    for (int i = 0; i < length; i++) b.append(ALPHABET.charAt(RANDOM.nextInt(ALPHABET.length())));
    return b.toString();
  }
}
