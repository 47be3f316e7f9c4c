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

/** PostgreSQL: one statement per operation (protocol/postgres). */
final class PostgresOps extends Ops {
  PostgresOps(String prefix) {
    super("postgres", prefix);
  }

  @Override
  BeginOutcome begin(Connection c, BeginArgs a) throws SQLException {
    try (PreparedStatement ps = prepare(c, one("begin"), b(a.scope()), b(a.key()), a.fingerprint(),
        Args.micros(a.lease()), Args.micros(a.retention()), b(a.owner())); ResultSet rs = ps.executeQuery()) {
      return beginRow(rs);
    }
  }

  @Override
  CommitOutcome commit(Connection c, CommitArgs a) throws SQLException {
    try (PreparedStatement ps = prepare(c, one("commit"), b(a.scope()), b(a.key()), a.fence(), Args.micros(a.retention()),
        a.result(), a.overUncertain()); ResultSet rs = ps.executeQuery()) {
      if (!rs.next()) return CommitOutcome.FENCED;
      String kind = rs.getString(1);
      return switch (kind) {
        case "c" -> CommitOutcome.COMMITTED;
        case "f" -> CommitOutcome.FENCED;
        case "x" -> null;
        default -> throw new StoreProtocolException(kindError("commit", kind));
      };
    }
  }

  @Override
  ReleaseOutcome release(Connection c, ReleaseArgs a) throws SQLException {
    boolean released;
    if (a.restoreToken().isEmpty()) {
      released = anyRow(c, one("release"), b(a.scope()), b(a.key()), a.fence());
    } else {
      TokenRestore t = a.restoreToken().get();
      released = anyRow(c, one("release_restore"), b(a.scope()), b(a.key()), a.fence(), b(t.token()),
          Args.micros(t.ttl()));
    }
    return released ? ReleaseOutcome.RELEASED : ReleaseOutcome.FENCED;
  }

  @Override
  boolean changed(Connection c, String op, Object... args) throws SQLException {
    return anyRow(c, one(op), args);
  }

  @Override
  LockOutcome lock(Connection c, String name, String owner, long ttlUs) throws SQLException {
    try (PreparedStatement ps = prepare(c, one("lock"), b(name), b(owner), ttlUs); ResultSet rs = ps.executeQuery()) {
      if (!rs.next()) return null;
      String kind = rs.getString(1);
      return switch (kind) {
        case "l" -> new LockOutcome.Locked(rs.getLong(2));
        case "b" -> new LockOutcome.Busy(us(rs.getLong(3)));
        case "x" -> null;
        default -> throw new StoreProtocolException(kindError("lock", kind));
      };
    }
  }

  @Override
  long[] sweep(Connection c, String step) throws SQLException {
    try (PreparedStatement ps = prepare(c, one(step)); ResultSet rs = ps.executeQuery()) {
      rs.next();
      return new long[] {rs.getLong(1), rs.getLong(2)};
    }
  }
}
