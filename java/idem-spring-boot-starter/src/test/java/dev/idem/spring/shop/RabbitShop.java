package dev.idem.spring.shop;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.aopalliance.intercept.MethodInterceptor;
import org.springframework.amqp.core.Declarables;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.core.QueueBuilder;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.support.converter.Jackson2JsonMessageConverter;
import org.springframework.amqp.support.converter.MessageConverter;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.amqp.SimpleRabbitListenerContainerFactoryConfigurer;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The shop's queues (named per test run, each with a dead-letter queue), JSON messages, and a
 * listener container that can "die before its ack": a message with header x-crash-before-ack is
 * handled, then its first delivery fails in the container after the listener returned, so the
 * broker delivers it again.
 */
@Configuration
@ConditionalOnProperty(name = "shop.queue")
public class RabbitShop {
  /** Deliveries seen by the container, by message id or order number. */
  public static final Map<String, AtomicInteger> DELIVERIES = new ConcurrentHashMap<>();

  public static int deliveries(String id) {
    AtomicInteger n = DELIVERIES.get(id);
    return n == null ? 0 : n.get();
  }

  @Bean
  Declarables shopQueues(@Value("${shop.queue}") String q) {
    return new Declarables(queue(q), queue(q + ".by-order"), queue(q + ".hold"), queue(q + ".tx"),
        dlq(q + ".dlq"), dlq(q + ".by-order.dlq"), dlq(q + ".hold.dlq"), dlq(q + ".tx.dlq"));
  }

  // Not auto-delete: a consumer's lost connection must not take the queue and its unacked
  // messages with it. They expire 10 minutes after their last use.
  private static Queue queue(String name) {
    return QueueBuilder.nonDurable(name).expires(600_000).deadLetterExchange("").deadLetterRoutingKey(name + ".dlq").build();
  }

  private static Queue dlq(String name) {
    return QueueBuilder.nonDurable(name).expires(600_000).build();
  }

  @Bean
  MessageConverter json() {
    return new Jackson2JsonMessageConverter();
  }

  @Bean
  SimpleRabbitListenerContainerFactory rabbitListenerContainerFactory(
      SimpleRabbitListenerContainerFactoryConfigurer configurer, ConnectionFactory connections) {
    SimpleRabbitListenerContainerFactory f = new SimpleRabbitListenerContainerFactory();
    configurer.configure(f, connections);
    f.setRecoveryInterval(200L);
    MethodInterceptor crashBeforeAck = inv -> {
      Message m = (Message) inv.getArguments()[1];
      String id = m.getMessageProperties().getMessageId();
      String name = id != null ? id : "no-id:" + new String(m.getBody(), java.nio.charset.StandardCharsets.UTF_8);
      int n = DELIVERIES.computeIfAbsent(name, x -> new AtomicInteger()).incrementAndGet();
      Object r = inv.proceed();
      if (n == 1 && Boolean.TRUE.equals(m.getMessageProperties().getHeaders().get("x-crash-before-ack")))
        throw new IllegalStateException("the consumer died before its ack");
      return r;
    };
    f.setAdviceChain(crashBeforeAck);
    return f;
  }
}
