package dev.idem.spring.shop;

import dev.idem.spring.Idempotent;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;

/**
 * A points ledger on MariaDB whose claims are written in its own transaction: the row and the
 * idempotency record commit, or roll back, together.
 */
@Service
@ConditionalOnProperty(name = "shop.ledger", havingValue = "true")
public class LedgerService {
  private final JdbcTemplate jdbc;

  public LedgerService(JdbcTemplate jdbc) {
    this.jdbc = jdbc;
    jdbc.execute("CREATE TABLE IF NOT EXISTS shop_ledger (id BIGINT AUTO_INCREMENT PRIMARY KEY, op VARCHAR(255) NOT NULL,"
        + " amount BIGINT NOT NULL)");
  }

  public record Entry(long id, long amount) {}

  @Idempotent(key = "#op", transactional = true)
  public Entry credit(String op, long amount, boolean failAfterWrite) throws InterruptedException {
    jdbc.update("INSERT INTO shop_ledger (op, amount) VALUES (?, ?)", op, amount);
    Long id = jdbc.queryForObject("SELECT LAST_INSERT_ID()", Long.class);
    Thread.sleep(50);
    if (failAfterWrite) throw new IllegalStateException("the bank said no");
    return new Entry(id, amount);
  }

  /** A business error in the result: the transaction, write and claim, rolls back. */
  @Idempotent(key = "#op", transactional = true, releaseWhen = "#result.code != 0")
  public CommonResult<Long> debit(String op, long amount) {
    jdbc.update("INSERT INTO shop_ledger (op, amount) VALUES (?, ?)", op, -amount);
    return amount > 100 ? CommonResult.error(2001, "limit exceeded") : CommonResult.ok(amount);
  }

  /** Not declared transactional: on the JDBC store it joins a READ COMMITTED transaction it is called in. */
  @Idempotent(key = "#op")
  public long plain(String op) {
    jdbc.update("INSERT INTO shop_ledger (op, amount) VALUES (?, 0)", op);
    return 1;
  }

  public int rows(String op) {
    return jdbc.queryForObject("SELECT COUNT(*) FROM shop_ledger WHERE op = ?", Integer.class, op);
  }
}
