package dev.idem.spring;

import dev.idem.core.ClaimRunner;
import dev.idem.core.IdemStore;
import dev.idem.spring.support.IdemMetrics;
import dev.idem.spring.support.MicrometerIdemMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Micrometer metrics and the Actuator health indicator {@code idem} (docs/spring.md, "Health and metrics"). */
@AutoConfiguration(before = IdemAutoConfiguration.class, afterName = {
    "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
    "org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration",
    "org.springframework.boot.actuate.autoconfigure.metrics.export.prometheus.PrometheusMetricsExportAutoConfiguration"})
public class IdemActuatorAutoConfiguration {

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(MeterRegistry.class)
  static class Metrics {
    @Bean
    @ConditionalOnMissingBean(IdemMetrics.class)
    @ConditionalOnBean(MeterRegistry.class)
    IdemMetrics idemMetrics(MeterRegistry registry) {
      return new MicrometerIdemMetrics(registry);
    }
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(HealthIndicator.class)
  @ConditionalOnEnabledHealthIndicator("idem")
  static class HealthConfiguration {
    @Bean
    @ConditionalOnMissingBean(name = "idemHealthIndicator")
    HealthIndicator idemHealthIndicator(IdemStore store, ClaimRunner runner) {
      return new AbstractHealthIndicator("idem: the store did not answer") {
        @Override
        protected void doHealthCheck(Health.Builder builder) {
          store.ping();
          builder.up().withDetail("store", store.traits().name()).withDetail("pendingSettles", runner.pendingSettles());
        }
      };
    }
  }
}
