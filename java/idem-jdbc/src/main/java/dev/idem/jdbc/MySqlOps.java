package dev.idem.jdbc;

import dev.idem.core.Args;
import dev.idem.core.BeginArgs;
import dev.idem.core.BeginOutcome;
import dev.idem.core.CommitArgs;
import dev.idem.core.CommitOutcome;
import dev.idem.core.LockOutcome;
import dev.idem.core.ReleaseArgs;
import dev.idem.core.ReleaseOutcome;
import dev.idem.core.StoreProtocolException;
import dev.idem.core.TokenRestore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;

/**
 * MySQL and MariaDB: the statements of an operation one after another on the connection, inside
 * one transaction the caller owns (protocol/mysql). ROW_COUNT() and the update counts are rows
 * found, not changed: the connection must not use affected rows (Connector/J and the MariaDB
 * driver count found rows unless {@code useAffectedRows=true}).
 */
final class MySqlOps extends Ops {
  MySqlOps(String prefix) {
    super("mysql", prefix);
  }

  // Runs every statement but the last as updates, the last as a query.
  private ResultSet runAll(Connection c, List<Sql> statements, List<PreparedStatement> open, Object... args)
      throws SQLException {
    for (int i = 0; i < statements.size() - 1; i++) {
      try (PreparedStatement ps = prepare(c, statements.get(i), args)) {
        ps.execute();
      }
    }
    PreparedStatement last = prepare(c, statements.get(statements.size() - 1), args);
    open.add(last);
    return last.executeQuery();
  }

  private interface RowReader<T> {
    T read(ResultSet rs) throws SQLException;
  }

  private <T> T query(Connection c, String op, RowReader<T> reader, Object... args) throws SQLException {
    List<PreparedStatement> open = new java.util.ArrayList<>();
    try (ResultSet rs = runAll(c, sql(op), open, args)) {
      return reader.read(rs);
    } finally {
      for (PreparedStatement ps : open) ps.close();
    }
  }

  @Override
  BeginOutcome begin(Connection c, BeginArgs a) throws SQLException {
    return query(c, "begin", Ops::beginRow, b(a.scope()), b(a.key()), a.fingerprint(), Args.micros(a.lease()),
        Args.micros(a.retention()), b(a.owner()));
  }

  @Override
  CommitOutcome commit(Connection c, CommitArgs a) throws SQLException {
    return query(c, "commit", rs -> {
      String kind = rs.next() ? rs.getString(1) : null;
      if (kind == null || kind.equals("f")) return CommitOutcome.FENCED;
      if (kind.equals("c")) return CommitOutcome.COMMITTED;
      throw new StoreProtocolException(kindError("commit", kind));
    }, b(a.scope()), b(a.key()), a.fence(), Args.micros(a.retention()), a.result(), a.overUncertain(),
        (long) a.overUncertain().length);
  }

  @Override
  ReleaseOutcome release(Connection c, ReleaseArgs a) throws SQLException {
    if (a.restoreToken().isEmpty())
      return changed(c, "release", b(a.scope()), b(a.key()), a.fence()) ? ReleaseOutcome.RELEASED : ReleaseOutcome.FENCED;
    TokenRestore t = a.restoreToken().get();
    List<Sql> s = sql("release_restore");
    Object[] args = {b(a.scope()), b(a.key()), a.fence(), b(t.token()), Args.micros(t.ttl())};
    int found = update(c, s.get(0), args);
    for (int i = 1; i < s.size(); i++) update(c, s.get(i), args);
    return found > 0 ? ReleaseOutcome.RELEASED : ReleaseOutcome.FENCED;
  }

  @Override
  boolean changed(Connection c, String op, Object... args) throws SQLException {
    return update(c, one(op), args) > 0;
  }

  @Override
  LockOutcome lock(Connection c, String name, String owner, long ttlUs) throws SQLException {
    return query(c, "lock", rs -> {
      if (!rs.next()) return null;
      String kind = rs.getString(1);
      return switch (kind) {
        case "l" -> new LockOutcome.Locked(rs.getLong(2));
        case "b" -> new LockOutcome.Busy(us(rs.getLong(4)));
        case "x" -> null;
        default -> throw new StoreProtocolException(kindError("lock", kind));
      };
    }, b(name), b(owner), ttlUs);
  }

  @Override
  long[] sweep(Connection c, String step) throws SQLException {
    int n = update(c, one(step));
    return new long[] {step.equals("sweep_records") ? n : 0, n};
  }
}
