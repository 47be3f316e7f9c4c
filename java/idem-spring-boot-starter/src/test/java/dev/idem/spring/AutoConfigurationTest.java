package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.core.ClaimRunner;
import dev.idem.core.IdemStore;
import dev.idem.core.MemoryStore;
import dev.idem.spring.support.IdempotentInterceptor;
import dev.idem.spring.support.ObservedStore;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Which store and beans the auto-configuration makes from what the application has, without servers. */
class AutoConfigurationTest {
  final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class, IdemAutoConfiguration.class,
          IdemActuatorAutoConfiguration.class));

  static class Counter {
    final AtomicInteger runs = new AtomicInteger();

    @Idempotent(key = "#id")
    public int once(String id) {
      return runs.incrementAndGet();
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class WithCounter {
    @Bean
    Counter counter() {
      return new Counter();
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class WithOwnStore {
    static final MemoryStore STORE = new MemoryStore();

    @Bean
    IdemStore myStore() {
      return STORE;
    }
  }

  @Test
  void withoutAStoreTheContextFailsSayingWhatWouldDo() {
    runner.run(ctx -> {
      assertThat(ctx).hasFailed();
      assertThat(ctx.getStartupFailure()).rootCause().hasMessageContaining("no store for idem.store.type=auto")
          .hasMessageContaining("idem.store.type=memory").hasMessageContaining("idem.store.uri=redis://")
          .hasMessageContaining("a DataSource bean");
    });
  }

  @Test
  void theMemoryStoreWhenAskedAndAnAnnotatedBeanRunsOnce() {
    runner.withPropertyValues("idem.store.type=memory").withUserConfiguration(WithCounter.class).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.getBean(IdemStore.class)).isInstanceOf(ObservedStore.class);
      assertThat(ctx.getBean(IdemStore.class).traits().name()).isEqualTo("memory");
      assertThat(ctx).hasSingleBean(ClaimRunner.class).hasSingleBean(IdempotentInterceptor.class)
          .hasSingleBean(IdemTokens.class);
      Counter c = ctx.getBean(Counter.class);
      assertThat(c.once("a")).isEqualTo(1);
      assertThat(c.once("a")).isEqualTo(1);
      assertThat(c.once("b")).isEqualTo(2);
    });
  }

  @Test
  void theApplicationsOwnStoreWins() {
    runner.withUserConfiguration(WithOwnStore.class).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.getBean(IdemStore.class)).isSameAs(WithOwnStore.STORE);
    });
  }

  @Test
  void disabledTheMethodsRunUnprotected() {
    runner.withPropertyValues("idem.store.type=memory", "idem.enabled=false").withUserConfiguration(WithCounter.class)
        .run(ctx -> {
          Counter c = ctx.getBean(Counter.class);
          assertThat(c.once("a")).isEqualTo(1);
          assertThat(c.once("a")).isEqualTo(2);
        });
  }

  @Test
  void aMisconfiguredAnnotationFailsNamingTheMethod() {
    runner.withPropertyValues("idem.store.type=memory").withUserConfiguration(BadConfig.class).run(ctx -> {
      Bad b = ctx.getBean(Bad.class);
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> b.run("x"))
          .hasMessageContaining("@Idempotent on Bad.run").hasMessageContaining("not a duration");
    });
  }

  static class Bad {
    @Idempotent(key = "#id", lease = "soon")
    public int run(String id) {
      return 1;
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class BadConfig {
    @Bean
    Bad bad() {
      return new Bad();
    }
  }

  @Test
  void propertiesBind() {
    runner.withPropertyValues("idem.store.type=memory", "idem.defaults.lease=30s", "idem.defaults.on-uncertain=retry",
        "idem.web.subject=header:X-User-Id", "idem.tokens.ttl=1h", "idem.listener.missing-key=process").run(ctx -> {
          IdemProperties p = ctx.getBean(IdemProperties.class);
          assertThat(p.defaults().lease()).hasSeconds(30);
          assertThat(p.defaults().onUncertain()).isEqualTo(dev.idem.core.OnUncertain.RETRY);
          assertThat(p.defaults().waitFor()).hasSeconds(5);
          assertThat(p.web().subject()).isEqualTo("header:X-User-Id");
          assertThat(p.tokens().ttl()).hasHours(1);
          assertThat(p.listener().missingKey()).isEqualTo(IdemProperties.MissingKey.PROCESS);
          assertThat(p.store().redis().prefix()).isEqualTo("idem:");
        });
  }
}
