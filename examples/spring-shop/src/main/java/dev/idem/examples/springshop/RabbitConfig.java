package dev.idem.examples.springshop;

import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.support.converter.Jackson2JsonMessageConverter;
import org.springframework.amqp.support.converter.MessageConverter;
import org.springframework.boot.autoconfigure.amqp.SimpleRabbitListenerContainerFactoryConfigurer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** JSON messages; the listener container with the crash-before-ack fault. */
@Configuration
public class RabbitConfig {
  @Bean
  MessageConverter jsonMessages() {
    Jackson2JsonMessageConverter c = new Jackson2JsonMessageConverter();
    c.setAlwaysConvertToInferredType(true);
    return c;
  }

  @Bean
  SimpleRabbitListenerContainerFactory rabbitListenerContainerFactory(SimpleRabbitListenerContainerFactoryConfigurer configurer,
                                                                      ConnectionFactory connections, CrashBeforeAck crash) {
    SimpleRabbitListenerContainerFactory f = new SimpleRabbitListenerContainerFactory();
    configurer.configure(f, connections);
    f.setAdviceChain(crash);
    f.setRecoveryInterval(500L);
    return f;
  }
}
