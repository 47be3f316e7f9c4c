package dev.idem.spring.shop;

import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;

/**
 * A small shop for the starter's tests: orders, payments answering CommonResult, a form with
 * one-time tokens, a points ledger; users alice and bob (HTTP Basic), anonymous allowed.
 */
@SpringBootApplication
public class ShopApplication {

  @Bean
  @ConditionalOnWebApplication
  SecurityFilterChain security(HttpSecurity http) throws Exception {
    return http.csrf(c -> c.disable()).authorizeHttpRequests(a -> a.anyRequest().permitAll())
        .httpBasic(Customizer.withDefaults()).build();
  }

  @Bean
  UserDetailsService users() {
    return new InMemoryUserDetailsManager(
        User.withUsername("alice").password("{noop}alice-pw").roles("USER").build(),
        User.withUsername("bob").password("{noop}bob-pw").roles("USER").build());
  }

  @Bean
  Executions executions() {
    return new Executions();
  }
}
