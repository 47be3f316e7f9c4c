package dev.idem.core;

/**
 * What the work learns about its claim.
 *
 * @param fence greater than every fence handed out for this key before: make the work's own
 *     writes conditional on it, so that a holder that lost its claim cannot overwrite
 * @param recovered an earlier holder's lease ran out mid-run (policy RETRY): its outcome is unknown
 */
public record Attempt(String scope, String key, long fence, boolean recovered) {}
