package dev.idem.spring.store;

import dev.idem.core.IdemStore;
import dev.idem.spring.IdemProperties;

/**
 * One way of opening the store, contributed by the part of the auto-configuration whose classes
 * are present. {@code idem.store.type=auto} takes the first {@link #available()} one by {@link
 * #priority()}: what idem.* names (a store URI, the control API), then the application's Redis, then its
 * DataSource.
 */
public interface IdemStoreOpener {
  IdemProperties.StoreType type();

  /** Lower first. */
  int priority();

  /** Whether the application has what this opener needs (a Redis connection, a DataSource, a URI). */
  boolean available();

  /** What {@link #available()} looked for, for the message when nothing is. */
  String needs();

  IdemStore open();
}
