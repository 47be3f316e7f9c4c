package dev.idem.client;

/**
 * What the work learns about its claim.
 *
 * @param fence greater than every fence handed out for this key before: a service can make
 *     its own writes conditional on it, so a holder whose claim was lost cannot overwrite
 * @param recovered an earlier holder's lease expired mid-run (only under {@link OnUncertain#RETRY})
 */
public record Attempt(String scope, String key, long fence, boolean recovered) {}
