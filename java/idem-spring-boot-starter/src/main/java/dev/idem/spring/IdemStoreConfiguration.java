package dev.idem.spring;

import dev.idem.client.ControlApiStore;
import dev.idem.client.Idem;
import dev.idem.core.IdemStore;
import dev.idem.core.MemoryStore;
import dev.idem.jdbc.JdbcStore;
import dev.idem.redis.RedisStore;
import dev.idem.spring.store.IdemStoreOpener;
import dev.idem.spring.store.JdbcStores;
import dev.idem.spring.store.JdbcTransactionScope;
import dev.idem.spring.store.RedisStores;
import dev.idem.spring.support.ObservedStore;
import dev.idem.spring.support.TransactionScope;
import io.lettuce.core.resource.ClientResources;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails;
import org.springframework.boot.autoconfigure.data.redis.RedisProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.util.StringUtils;

/**
 * The ways of opening the store, each switched on by the classes the application has: the
 * engine's module ({@code idem-redis}, {@code idem-jdbc}, {@code idem-client}) and Spring's
 * (spring-data-redis, spring-jdbc). {@link IdemAutoConfiguration} picks one.
 */
final class IdemStoreConfiguration {
  private IdemStoreConfiguration() {}

  /** {@code idem.store.uri}: a Redis store URI, opened with a client of idem's own. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(RedisStore.class)
  static class RedisUri {
    @Bean
    IdemStoreOpener idemRedisUriOpener(IdemProperties props) {
      return new IdemStoreOpener() {
        @Override
        public IdemProperties.StoreType type() {
          return IdemProperties.StoreType.REDIS;
        }

        @Override
        public int priority() {
          return 0;
        }

        @Override
        public boolean available() {
          String uri = props.store().uri();
          return uri != null && (uri.startsWith("redis://") || uri.startsWith("redis-cluster://"));
        }

        @Override
        public String needs() {
          return "idem.store.uri=redis://...";
        }

        @Override
        public IdemStore open() {
          return RedisStore.open(props.store().uri());
        }
      };
    }
  }

  /** The application's Redis (spring-data-redis): its connection details and Lettuce resources. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({RedisStore.class, RedisConnectionDetails.class, ClientResources.class})
  static class ApplicationRedis {
    @Bean
    IdemStoreOpener idemRedisOpener(IdemProperties props, ObjectProvider<RedisConnectionDetails> details,
                                    ObjectProvider<RedisProperties> redisProperties,
                                    ObjectProvider<ClientResources> resources) {
      return new IdemStoreOpener() {
        @Override
        public IdemProperties.StoreType type() {
          return IdemProperties.StoreType.REDIS;
        }

        @Override
        public int priority() {
          return 10;
        }

        @Override
        public boolean available() {
          return details.getIfAvailable() != null;
        }

        @Override
        public String needs() {
          return "spring-boot-starter-data-redis (a RedisConnectionDetails bean)";
        }

        @Override
        public IdemStore open() {
          RedisProperties rp = redisProperties.getIfAvailable();
          boolean ssl = rp != null && rp.getSsl().isEnabled();
          RedisStore.Options options = new RedisStore.Options(props.store().redis().prefix(), props.store().timeout(),
              props.store().redis().allowEviction());
          return RedisStores.open(details.getObject(), ssl, resources.getIfAvailable(), options);
        }
      };
    }
  }

  /** The application's DataSource (MySQL, MariaDB, PostgreSQL), and claims in its transactions. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({JdbcStore.class, DataSource.class, PlatformTransactionManager.class,
      org.springframework.jdbc.datasource.DataSourceUtils.class})
  static class ApplicationJdbc {
    @Bean
    IdemStoreOpener idemJdbcOpener(IdemProperties props, ObjectProvider<DataSource> dataSource) {
      return new IdemStoreOpener() {
        @Override
        public IdemProperties.StoreType type() {
          return IdemProperties.StoreType.JDBC;
        }

        @Override
        public int priority() {
          return 20;
        }

        @Override
        public boolean available() {
          return dataSource.getIfUnique() != null;
        }

        @Override
        public String needs() {
          return "a DataSource bean (spring-boot-starter-jdbc)";
        }

        @Override
        public IdemStore open() {
          return JdbcStores.open(dataSource.getObject(), options(props));
        }
      };
    }

    static JdbcStore.Options options(IdemProperties props) {
      return JdbcStore.Options.defaults().withTablePrefix(props.store().jdbc().tablePrefix())
          .withCreateSchema(props.store().jdbc().createSchema());
    }

    /**
     * Claims in the application's transactions: on the idem store when it is the JDBC store on
     * this DataSource (every call made inside such a transaction joins it); else on a JDBC store
     * opened at the first {@code transactional = true} call.
     */
    @Bean
    Supplier<TransactionScope> idemTransactionScope(IdemProperties props, IdemStore store,
                                                    ObjectProvider<DataSource> dataSource,
                                                    ObjectProvider<PlatformTransactionManager> transactions) {
      return new Supplier<>() {
        private volatile TransactionScope scope;

        @Override
        public TransactionScope get() {
          TransactionScope s = scope;
          if (s != null) return s;
          DataSource ds = dataSource.getIfUnique();
          if (ds == null) return null;
          synchronized (this) {
            if (scope == null) {
              IdemStore inner = store instanceof ObservedStore o ? o.unwrap() : store;
              boolean primary = inner instanceof JdbcStore;
              JdbcStore jdbc = primary ? (JdbcStore) inner : JdbcStores.open(ds, options(props));
              scope = new JdbcTransactionScope(jdbc, ds, transactions.getIfUnique(), primary);
            }
            return scope;
          }
        }
      };
    }
  }

  /** The control API of a running {@code idem serve}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(ControlApiStore.class)
  static class ControlApi {
    @Bean
    IdemStoreOpener idemControlApiOpener(IdemProperties props) {
      return new IdemStoreOpener() {
        @Override
        public IdemProperties.StoreType type() {
          return IdemProperties.StoreType.CONTROL_API;
        }

        @Override
        public int priority() {
          return 5;  // named in idem.*: before what the application merely has
        }

        @Override
        public boolean available() {
          return StringUtils.hasText(props.store().controlApi().baseUri());
        }

        @Override
        public String needs() {
          return "idem.store.control-api.base-uri";
        }

        @Override
        public IdemStore open() {
          Idem.Builder b = Idem.builder().baseUri(props.store().controlApi().baseUri())
              .requestTimeout(props.store().timeout());
          if (StringUtils.hasText(props.store().controlApi().token())) b.token(props.store().controlApi().token());
          return new ControlApiStore(b.build());
        }
      };
    }
  }

  /** In this process only. */
  static IdemStoreOpener memory() {
    return new IdemStoreOpener() {
      @Override
      public IdemProperties.StoreType type() {
        return IdemProperties.StoreType.MEMORY;
      }

      @Override
      public int priority() {
        return 100;
      }

      @Override
      public boolean available() {
        return true;  // never chosen by auto: records in one process protect nothing across instances
      }

      @Override
      public String needs() {
        return "idem.store.type=memory";
      }

      @Override
      public IdemStore open() {
        return new MemoryStore();
      }
    };
  }
}
