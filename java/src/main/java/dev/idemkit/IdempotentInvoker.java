package dev.idemkit;

import java.lang.ref.Reference;
import java.lang.reflect.UndeclaredThrowableException;

/**
 * Runs one call through the core's protocol: {@code begin} (derive the key, claim it, wait in
 * short native steps), then the body on the calling thread, then {@code succeed}/{@code fail}. The
 * core decides what every answer means; this class only runs the body when told to. Shared by the
 * tool dispatcher and (later) the web-service executor.
 */
final class IdempotentInvoker {
    private static final System.Logger LOG = System.getLogger("dev.idemkit");
    /** The longest a single native call may block (SPEC §7: about 100 ms). */
    static final int STEP_BUDGET_MS = 100;
    private static final byte[] NOTHING = new byte[0];

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

    /** How results cross the store: JSON bytes out, the declared type back in. */
    interface ResultCodec {
        byte[] encode(Object result) throws Exception;

        Object decode(byte[] json) throws Exception;
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
    static Object invoke(NativeIdempotencyStore store, NativeTool tool, String tenant, String run, JsonInput input,
            String suppliedKey, Body body, ResultCodec codec) {
        return invoke(store, tool, null, tenant, run, input, suppliedKey, body, codec);
    }

    /** As above, with the tenant and run of a {@link NativeContext} (no per-call string conversion). */
    static Object invoke(NativeIdempotencyStore store, NativeTool tool, NativeContext context, JsonInput input,
            String suppliedKey, Body body, ResultCodec codec) {
        return invoke(store, tool, context, context.tenant, context.run, input, suppliedKey, body, codec);
    }

    private static Object invoke(NativeIdempotencyStore store, NativeTool tool, NativeContext nativeContext, String tenant,
            String run, JsonInput input, String suppliedKey, Body body, ResultCodec codec) {
        long[] out = new long[2];
        byte[] replay;
        byte[] bytes = input == null ? null : input.bytes;
        int length = input == null ? 0 : input.length;
        boolean explicit = tool.strategy == KeyStrategy.EXPLICIT;
        long storeHandle = store.handle.acquire();
        try {
            replay = nativeContext != null
                    ? NativeBridge.beginIn(storeHandle, tool.handle, nativeContext.handle, bytes, length, explicit, STEP_BUDGET_MS, out)
                    : NativeBridge.begin(storeHandle, tool.handle, tenant, run, bytes, length, explicit, STEP_BUDGET_MS, out);
        } finally {
            store.handle.release();
            Reference.reachabilityFence(store);
            Reference.reachabilityFence(tool);
            Reference.reachabilityFence(nativeContext);
        }
        if (out[1] == NativeBridge.STEP_REPLAY) {
            return decode(tool, codec, replay);
        }
        long attempt = out[0];
        boolean settled = false;
        try {
            while (out[1] == NativeBridge.STEP_PENDING) {
                if (Thread.interrupted()) {
                    Thread.currentThread().interrupt();
                    throw new InProgressException("`" + tool.name + "` was interrupted while waiting for another call"
                            + " holding the same key; nothing was run", tool.name, NativeBridge.attemptKey(attempt));
                }
                replay = NativeBridge.advance(attempt, STEP_BUDGET_MS, out);
                if (out[1] == NativeBridge.STEP_REPLAY) {
                    settled = true;
                    return decode(tool, codec, replay);
                }
            }
            String key = NativeBridge.attemptKey(attempt);
            IdempotencyContext context = new IdempotencyContext(tool.name, key, suppliedKey, tenant, run, tool.strategy);
            Object result;
            context.enter();
            try {
                result = body.run(context);
            } catch (NotRun refused) {
                throw refused.reason;
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
                // The body ran: never run it again. The claim is left to become abandoned.
                NativeBridge.succeed(attempt, NOTHING, 0);
                LOG.log(System.Logger.Level.WARNING, "idemkit: the result of `{0}` (key {1}) does not serialise as JSON,"
                        + " so it was not recorded and its claim will become abandoned: {2}", tool.name, key, unencodable);
                return result;
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

    private static Object decode(NativeTool tool, ResultCodec codec, byte[] json) {
        try {
            return codec.decode(json);
        } catch (Exception e) {
            throw new IdempotencyException(ErrorKind.INTERNAL, "the remembered result of `" + tool.name
                    + "` does not read back as its declared type: " + e.getMessage(), tool.name, null, e);
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
