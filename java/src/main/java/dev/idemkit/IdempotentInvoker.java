package dev.idemkit;

import java.lang.ref.Reference;
import java.lang.reflect.UndeclaredThrowableException;

/**
 * Runs one call through the core's protocol: {@code begin} (derive the key, claim it, wait in
 * short native steps), then the body on the calling thread, then {@code succeed}/{@code fail}. The
 * core decides what every answer means; this class only runs the body when told to. Shared by the
 * tool dispatcher and the web-service executor.
 */
final class IdempotentInvoker {
    private static final System.Logger LOG = System.getLogger("dev.idemkit");
    /** The longest a single native call may block (SPEC §7: about 100 ms). */
    static final int STEP_BUDGET_MS = 100;

    private IdempotentInvoker() {
    }

    /** The body of a call, given its context; may throw anything. */
    interface Body {
        Object run(IdempotencyContext context) throws Throwable;
    }

    /** Thrown by a body that refused to start (e.g. its arguments do not bind): the claim is released. */
    static final class NotRun extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final RuntimeException reason;

        NotRun(RuntimeException reason) {
            super(reason.getMessage(), reason, false, false);
            this.reason = reason;
        }
    }

    /**
     * Thrown by a body whose effect may or may not have happened (a web-service exchange cut at the
     * deadline): nothing is recorded or released, so the claim stays in progress until its lease
     * ends and then reads as abandoned (SPEC §3). {@code reason} is what the caller gets.
     */
    static final class OutcomeUnknown extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final RuntimeException reason;

        OutcomeUnknown(RuntimeException reason) {
            super(reason.getMessage(), reason, false, false);
            this.reason = reason;
        }
    }

    /** How results cross the store: JSON bytes out, the declared type back in. */
    interface ResultCodec {
        byte[] encode(Object result) throws Exception;

        /** The declared result type, for messages. */
        String type();

        /** The value {@link #encode} writes (a web-service response's body value). */
        default Object value(Object result) {
            return result;
        }

        /**
         * The remembered result, read from a native answer: its JSON runs from {@code offset} to the
         * end; {@link NativeBridge#key} reads the call's key from it.
         */
        Object decode(byte[] answer, int offset) throws Exception;
    }

    /** One native tool (a validated name + policy + timeout), freed when its owner is unreachable. */
    static final class NativeTool {
        final String name;
        final KeyStrategy strategy;
        final boolean hasTimeout;
        final long handle;

        NativeTool(String name, KeyStrategy strategy, boolean hasTimeout, long handle) {
            this.name = name;
            this.strategy = strategy;
            this.hasTimeout = hasTimeout;
            this.handle = handle;
        }
    }

    /**
     * Calls {@code body} at most once per key.
     *
     * @param input the JSON input (HASH_INPUT), the explicit key as a JSON string (EXPLICIT), or null
     */
    static Object invoke(NativeIdempotencyStore store, NativeTool tool, NativeContext nativeContext, JsonInput input,
            String suppliedKey, Body body, ResultCodec codec) {
        byte[] answer;
        byte[] bytes = input == null ? null : input.bytes;
        int length = input == null ? 0 : input.length;
        boolean explicit = tool.strategy == KeyStrategy.EXPLICIT;
        long storeHandle = store.handle.acquire();
        try {
            answer = NativeBridge.begin(storeHandle, tool.handle, nativeContext.handle, bytes, length, explicit,
                    STEP_BUDGET_MS);
        } finally {
            store.handle.release();
            Reference.reachabilityFence(store);
            Reference.reachabilityFence(tool);
            Reference.reachabilityFence(nativeContext);
        }
        if (NativeBridge.step(answer) == NativeBridge.STEP_REPLAY) {
            return decode(tool, codec, answer);
        }
        long attempt = NativeBridge.attempt(answer);
        boolean settled = false;
        try {
            while (NativeBridge.step(answer) == NativeBridge.STEP_PENDING) {
                if (Thread.interrupted()) {
                    Thread.currentThread().interrupt();
                    throw new InProgressException("`" + tool.name + "` was interrupted while waiting for another call"
                            + " holding the same key; nothing was run", tool.name, NativeBridge.key(answer));
                }
                answer = NativeBridge.advance(attempt, STEP_BUDGET_MS);
                if (NativeBridge.step(answer) == NativeBridge.STEP_REPLAY) {
                    settled = true;
                    return decode(tool, codec, answer);
                }
            }
            String key = NativeBridge.key(answer);
            IdempotencyContext context = new IdempotencyContext(tool.name, key, suppliedKey, nativeContext.tenant,
                    nativeContext.run, tool.strategy);
            Object result;
            context.enter();
            try {
                result = body.run(context);
            } catch (NotRun refused) {
                throw refused.reason;
            } catch (OutcomeUnknown unknown) {
                // Neither recorded nor released: the claim stays in progress, then reads as abandoned.
                settled = true;
                throw unknown.reason;
            } catch (Throwable thrown) {
                settled = true;
                String detail = NativeBridge.fail(attempt, thrown.getClass().getName(), String.valueOf(thrown.getMessage()));
                if (detail != null) {
                    LOG.log(System.Logger.Level.WARNING, "idemkit: `{0}` failed and its claim could not be settled: {1}",
                            tool.name, detail);
                }
                throw rethrow(thrown);
            } finally {
                context.exit();
            }
            settled = true;
            byte[] json;
            try {
                json = codec.encode(result);
            } catch (Exception unencodable) {
                // SPEC v1.1 rule 6: reported to the core as a failure of the body, which settles it.
                String type = ResultTypes.describe(codec.value(result), codec.type());
                UnencodableResultException failure = new UnencodableResultException("`" + tool.name + "` returned a "
                        + type + " that could not be written as JSON, so it was not recorded and the call counts as"
                        + " failed: " + unencodable.getMessage(), tool.name, key, type, unencodable);
                String detail = NativeBridge.fail(attempt, failure.getClass().getName(), failure.getMessage());
                if (detail != null) {
                    LOG.log(System.Logger.Level.WARNING, "idemkit: `{0}` failed and its claim could not be settled: {1}",
                            tool.name, detail);
                }
                throw failure;
            }
            String detail = NativeBridge.succeed(attempt, json, json.length);
            if (detail != null) {
                LOG.log(System.Logger.Level.WARNING, "idemkit: `{0}` succeeded under key {1} but {2}", tool.name, key, detail);
            }
            if (tool.hasTimeout && NativeBridge.overran(attempt)) {
                throw new IdempotencyTimeoutException("`" + tool.name + "` ran past its deadline (timeoutMs) under key "
                        + key + "; its outcome was recorded, so a retry gets the remembered result without running it"
                        + " again", tool.name, key);
            }
            return result;
        } finally {
            if (!settled) {
                NativeBridge.abandonUnrun(attempt);
            }
            NativeBridge.attemptDestroy(attempt);
        }
    }

    private static Object decode(NativeTool tool, ResultCodec codec, byte[] answer) {
        try {
            return codec.decode(answer, NativeBridge.resultOffset(answer));
        } catch (Exception e) {
            throw new IdempotencyException(ErrorKind.INTERNAL, "the remembered result of `" + tool.name
                    + "` does not read back as its declared type: " + e.getMessage(), tool.name, NativeBridge.key(answer),
                    e);
        }
    }
    /** Unchecked exceptions and errors unchanged; a checked one wrapped, as reflection does. */
    private static RuntimeException rethrow(Throwable thrown) {
        if (thrown instanceof RuntimeException) {
            return (RuntimeException) thrown;
        }
        if (thrown instanceof Error) {
            throw (Error) thrown;
        }
        return new UndeclaredThrowableException(thrown, thrown.getClass().getName() + ": " + thrown.getMessage());
    }
}
