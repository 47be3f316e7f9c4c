package dev.idem.examples.springshop;

import java.util.concurrent.atomic.AtomicInteger;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.stereotype.Component;

/**
 * --shop.crash-before-ack=N: the consumer kills itself (SIGKILL, as the reference consumer does)
 * right after fully handling its N-th message, before the container acks it. An advice of the
 * listener container, around the listener: the message's claim and grant have committed.
 */
@Component
public class CrashBeforeAck implements MethodInterceptor {
  private static final Log LOG = LogFactory.getLog(CrashBeforeAck.class);
  private final int n;
  private final AtomicInteger processed = new AtomicInteger();
  private final ThreadLocal<Boolean> grantedNow = new ThreadLocal<>();

  public CrashBeforeAck(ShopProperties props) {
    this.n = props.crashBeforeAck();
  }

  void processed() {
    grantedNow.set(true);
  }

  @Override
  public Object invoke(MethodInvocation invocation) throws Throwable {
    grantedNow.remove();
    Object r = invocation.proceed();
    if (n > 0 && Boolean.TRUE.equals(grantedNow.get()) && processed.incrementAndGet() == n) {
      LOG.warn("--shop.crash-before-ack " + n + ": killed before acking");
      new ProcessBuilder("kill", "-9", Long.toString(ProcessHandle.current().pid())).inheritIO().start().waitFor();
    }
    return r;
  }
}
