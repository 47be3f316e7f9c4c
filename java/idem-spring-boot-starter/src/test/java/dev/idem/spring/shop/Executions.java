package dev.idem.spring.shop;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/** How many times each piece of work ran, by a name the test chooses (its key). */
public final class Executions {
  private final ConcurrentHashMap<String, AtomicInteger> counts = new ConcurrentHashMap<>();

  public int add(String name) {
    return counts.computeIfAbsent(name, n -> new AtomicInteger()).incrementAndGet();
  }

  public int of(String name) {
    AtomicInteger n = counts.get(name);
    return n == null ? 0 : n.get();
  }
}
