/**
 * The engine's API (docs/java.md, docs/design.md): the store interface {@link dev.idem.core.IdemStore}
 * that every backend implements with identical semantics, its typed outcomes, the claim runner
 * ({@link dev.idem.core.ClaimRunner}) and the faces built on it, {@link dev.idem.core.IdempotentCall}
 * and {@link dev.idem.core.Deduplicator}.
 *
 * <p>Outcomes are values: a begin answers a sealed {@link dev.idem.core.BeginOutcome}, a commit a
 * {@link dev.idem.core.CommitOutcome}. Exceptions mean the store could not answer, and their class
 * says what to do: {@link dev.idem.core.NotAppliedException} (nothing happened: retry as is),
 * {@link dev.idem.core.OutcomeUnknownException} (it may have happened: read before retrying),
 * {@link dev.idem.core.StoreConfigurationException} (fix the configuration first);
 * {@link java.lang.IllegalArgumentException} for arguments that can never be valid.
 */
package dev.idem.core;
