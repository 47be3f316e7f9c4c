package dev.idem.core;

/**
 * What a backend offers, as data: callers never branch on a backend's name.
 *
 * @param name "memory", "redis", "redis-cluster", "mysql", "postgres", "control-api"
 * @param nativeExpiry expired records vanish without {@link IdemStore#sweep()}
 * @param durable a committed result survives a crash of the process
 * @param orderedList {@link IdemStore#list} pages newest first by a keyset cursor
 * @param overUncertain {@link CommitArgs#overUncertain()} is honoured (the control API cannot
 *     pass it: a late commit there stays fenced by an uncertain mark)
 * @param tokenRestoreOnRelease {@link ReleaseArgs#restoreToken()} is honoured
 */
public record StoreTraits(String name, boolean nativeExpiry, boolean durable, boolean orderedList,
                          boolean overUncertain, boolean tokenRestoreOnRelease) {}
