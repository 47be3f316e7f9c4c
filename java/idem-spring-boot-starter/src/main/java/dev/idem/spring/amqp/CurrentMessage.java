package dev.idem.spring.amqp;

import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.amqp.core.Message;

/**
 * The AMQP message a listener thread is handling, so that {@code @IdempotentListener} reads its
 * {@code message_id} whatever the listener method's arguments are. Set by an advice the starter
 * puts first in every listener container factory's advice chain (around the container's call of
 * the listener with the raw message).
 */
public final class CurrentMessage implements MethodInterceptor {
  private static final ThreadLocal<Message> CURRENT = new ThreadLocal<>();

  /** The message being handled on this thread, or null. */
  public static Message get() {
    return CURRENT.get();
  }

  @Override
  public Object invoke(MethodInvocation invocation) throws Throwable {
    Object[] args = invocation.getArguments();
    Message m = args.length > 1 && args[1] instanceof Message msg ? msg : null;
    if (m == null) return invocation.proceed();
    Message outer = CURRENT.get();
    CURRENT.set(m);
    try {
      return invocation.proceed();
    } finally {
      if (outer == null) CURRENT.remove();
      else CURRENT.set(outer);
    }
  }
}
