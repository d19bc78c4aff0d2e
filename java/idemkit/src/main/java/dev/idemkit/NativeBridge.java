package dev.idemkit;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * The native methods of {@code idemkit_jni}. Handles are native pointers as {@code long}s; 0 is
 * never a live handle (a call on 0 throws {@link NullPointerException}). No method blocks for more
 * than about 100 ms: {@link #begin} and {@link #advance} answer {@link #STEP_PENDING} and the
 * caller loops.
 */
final class NativeBridge {
    static final int STEP_RUN = 0;
    static final int STEP_REPLAY = 1;
    static final int STEP_PENDING = 2;

    /**
     * The header of an answer of {@link #begin}/{@link #advance}: the step (1 byte), the key's
     * length (1 byte), the attempt handle (8 bytes, little-endian; 0 for a replay). The key (ASCII:
     * 64-hex, a UUID, or nothing for NONE) follows, then, for {@link #STEP_REPLAY}, the remembered
     * result's JSON.
     */
    static final int HEADER = 10;

    private static final VarHandle LONG_LE =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    static {
        NativeLibrary.load();
    }

    private static final long[] POLICY_DEFAULTS = policyDefaults();

    /** The core's default {@code ttlSeconds} (SPEC §1), for a tool or action without a policy. */
    static final long DEFAULT_TTL_SECONDS = POLICY_DEFAULTS[0];

    /** The core's default {@code leaseSeconds} (SPEC §1), for a tool or action without a policy. */
    static final long DEFAULT_LEASE_SECONDS = POLICY_DEFAULTS[1];

    private NativeBridge() {}

    static int step(byte[] answer) {
        return answer[0];
    }

    static int keyLength(byte[] answer) {
        return answer[1];
    }

    /** The attempt handle of a {@link #STEP_RUN} or {@link #STEP_PENDING} answer. */
    static long attempt(byte[] answer) {
        return (long) LONG_LE.get(answer, 2);
    }

    /** Where a replay's JSON starts. */
    static int resultOffset(byte[] answer) {
        return HEADER + answer[1];
    }

    /** The call's key in an answer (64-hex or a UUID), or null (NONE). */
    static String key(byte[] answer) {
        int length = answer[1];
        return length == 0 ? null : new String(answer, HEADER, length, StandardCharsets.ISO_8859_1);
    }

    /** Opens a store by URL ({@code memory:}, {@code redis://}, {@code postgres://}). */
    static native long storeOpen(
            String url,
            String keyPrefix,
            String table,
            boolean allowEvicting,
            long maxOutcomeBytes);

    /**
     * Opens a store written in Java: the native executor calls {@code bridge} for every store
     * operation.
     */
    static native long storeOpenJava(Object bridge, String description, long maxOutcomeBytes);

    static native void storeDestroy(long store);

    /** Deletes every record of {@code tenant} (null: the records without a tenant). */
    static native long storeForget(long store, String tenant);

    static native long storePurgeExpired(long store);

    static native String storeDescribe(long store);

    /**
     * Event counts in the core's order: acquired, deduplicated, waited, wait_timed_out,
     * failed_fast, indeterminate, released, store_error, record_failed, retried.
     */
    static native long[] storeEventCounts(long store);

    /** Builds and validates a tool; {@code parameters} null skips the keyArguments check. */
    static native long toolNew(
            String name,
            String strategy,
            long ttlSeconds,
            String onCacheHit,
            boolean cacheFailures,
            String[] keyArguments,
            long leaseSeconds,
            long timeoutMs,
            String[] parameters,
            String effect,
            String[] noEffect,
            String[] permanent,
            long[] retry,
            String[] retryOn,
            boolean rejectPayloadMismatch,
            boolean upstreamHonorsKey);

    static native void toolDestroy(long tool);

    /**
     * Derives the key and claims it, waiting at most {@code budgetMs}; tenant and run come from a
     * {@link #contextNew} handle and {@code input} is read in place. Answers the step, the key and,
     * for a replay, the remembered result in one array (see {@link #HEADER}): a cache hit is one
     * crossing. A refusal (an {@link IdempotencyException}) names the key too. {@code input} is
     * ASCII JSON: the input, or the supplied key as a JSON string literal; the core picks by the
     * tool's strategy which one it keys on. Null for UUID/NONE.
     */
    static native byte[] begin(
            long store, long tool, long context, byte[] input, int length, int budgetMs);

    /**
     * {@link #begin} for an EXPLICIT call that also hands over its whole input: {@code input} is
     * the supplied key as a JSON string literal, {@code payload} the call's input as ASCII JSON
     * ({@link JsonInput}), whose fingerprint the record keeps; a repeat of the key with another
     * payload is refused with {@link PayloadMismatchException} and nothing runs (SPEC v1.1 rule 9).
     * Same answers as {@link #begin}.
     */
    static native byte[] beginWithPayload(
            long store,
            long tool,
            long context,
            byte[] input,
            int length,
            byte[] payload,
            int payloadLength,
            int budgetMs);

    /** A call context (tenant and run, either may be null), converted once per dispatcher view. */
    static native long contextNew(String tenant, String run);

    static native void contextDestroy(long context);

    /**
     * {@link IdempotencyKeys}: the core's key derivation (SPEC §2), touching no store. Scope,
     * tenant and run cross as JSON string literals (tenant/run null for none), {@code keyArguments}
     * as a JSON array of them (null for the whole input), the input as JSON text (with {@code
     * explicit}: the explicit key as a string literal), all ASCII with non-ASCII escaped ({@link
     * JsonInput}). Answers the 64-hex key; throws {@link InvalidKeyException} naming the field.
     */
    static native String fingerprint(byte[] input, int length);

    static native String deriveKey(
            byte[] scope,
            byte[] tenant,
            byte[] run,
            byte[] keyArguments,
            byte[] input,
            int length,
            boolean explicit);

    /** Keeps waiting after {@link #STEP_PENDING}; same answers as {@link #begin}. */
    static native byte[] advance(long attempt, int budgetMs);

    /** What the body did, for {@link #report} (mirrored in {@code ops.rs}). */
    static final int BODY_SUCCEEDED = 0;

    static final int BODY_FAILED = 1;
    static final int BODY_UNENCODABLE = 2;
    static final int BODY_NEVER_RAN = 3;
    static final int BODY_CANCELLED = 4;

    /**
     * Reports what the body did; the core settles the claim and decides what the caller gets.
     * Throws {@link IdempotencyTimeoutException} when the body was running at the deadline (the
     * message says what became of its outcome); otherwise the caller gets the body's own answer,
     * and this answers null, or why the outcome is not settled yet. {@code result} (JSON bytes) is
     * read for {@link #BODY_SUCCEEDED}, {@code errorType} and {@code message} for {@link
     * #BODY_FAILED} and {@link #BODY_UNENCODABLE}.
     */
    static native String report(
            long attempt,
            int body,
            byte[] result,
            int length,
            String errorType,
            String message,
            String[] types);

    /** What a failed exchange came to, for {@link #reportExchange} (mirrored in {@code ops.rs}). */
    static final int EXCHANGE_NOT_SENT = 0;

    static final int EXCHANGE_NO_ANSWER = 1;
    static final int EXCHANGE_ANSWERED = 2;

    /**
     * Reports a failed exchange with an upstream: what was seen ({@link #EXCHANGE_NOT_SENT}:
     * nothing written; {@link #EXCHANGE_NO_ANSWER}; {@link #EXCHANGE_ANSWERED} with {@code status})
     * and whether the request carried the key. The core decides whether it is sent again (then
     * {@link #attemptRetryPause} answers the pause and the claim is kept) and how the claim is
     * settled (SPEC v1.1 rule 12); answers and throws as {@link #report}.
     */
    static native String reportExchange(
            long attempt,
            String errorType,
            String message,
            String[] types,
            int exchange,
            int status,
            boolean keySent);

    /**
     * The operator action on one key: releases its unfinished record ({@code result} null) or
     * records {@code result} (JSON) for {@code ttlSeconds}. Answers false when there is no record;
     * throws {@link IllegalStateException} when the record must not be changed (a known outcome, a
     * live claim without {@code force}, a record that changed meanwhile).
     */
    static native boolean storeSettleKey(
            long store, String tenant, String key, String result, long ttlSeconds, boolean force);

    /**
     * After {@link #report}: the pause in ms before advancing the same call again and running its
     * body once more (the core's retry decision, SPEC v1.1 rule 8), or -1.
     */
    static native long attemptRetryPause(long attempt);

    /** From now on the store's events wait in the core for {@link #storeDrainEvents}. */
    static native void storeListen(long store);

    /**
     * The events waiting, five strings each (kind, tool, key, tenant, detail), oldest first; null
     * when none wait.
     */
    static native String[] storeDrainEvents(long store);

    /**
     * The native core's log lines waiting for Java, three strings each (level {@code ERROR}, {@code
     * WARN} or {@code INFO}, the Rust target, the message), oldest first; null when none wait. When
     * lines were dropped since the last drain, a leading line of level {@code DROPPED} has the
     * count as its message.
     */
    static native String[] logDrain();

    /**
     * The core's default {@code ttlSeconds} and {@code leaseSeconds}, for a tool without a policy.
     */
    static native long[] policyDefaults();

    static native void attemptDestroy(long attempt);

    /** Creates the PostgreSQL table and index if missing (the core's DDL, table name validated). */
    static native void postgresCreateTable(String url, String table);

    /**
     * The DDL for {@code table} (null: the default) and the SQL of every statement of the native
     * PostgreSQL store, as pairs: {@code "schema"}, DDL, {@code "claim"}, SQL, ...
     */
    static native String[] postgresStatements(String table);

    /** The native Redis store's Lua scripts (prelude included), as pairs of name and text. */
    static native String[] redisScripts();
}
