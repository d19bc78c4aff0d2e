package dev.idemkit;

import java.lang.ref.Reference;
import java.lang.reflect.UndeclaredThrowableException;

/**
 * Runs one call through the core's protocol: {@code begin} (derive the key, claim it, wait in short
 * native steps), then the body on the calling thread, then {@code report} of what the body did. The
 * core decides what every answer means (what is recorded or released, and whether the caller gets
 * the body's answer or the timeout); this class only runs the body when told to and translates.
 * Shared by the tool dispatcher and the web-service executor.
 */
final class IdempotentInvoker {
    private static final System.Logger LOG = System.getLogger("dev.idemkit");

    /** The longest a single native call may block (SPEC §7: about 100 ms). */
    static final int STEP_BUDGET_MS = 100;

    private IdempotentInvoker() {}

    /** The body of a call, given its context; may throw anything. */
    interface Body {
        Object run(IdempotencyContext context) throws Throwable;
    }

    /**
     * Thrown by a body that refused to start (e.g. its arguments do not bind): reported as never
     * run.
     */
    static final class NotRun extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final RuntimeException reason;

        NotRun(RuntimeException reason) {
            super(reason.getMessage(), reason, false, false);
            this.reason = reason;
        }
    }

    /**
     * Thrown by a body cut short while its effect may or may not have happened (a web-service
     * exchange aborted at the deadline): reported as cancelled, which the core leaves in progress
     * until the lease ends (SPEC v1.1 rule 3). {@code reason} is what the caller gets: the face's
     * own account of the timeout.
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
         * The remembered result, read from a native answer: its JSON runs from {@code offset} to
         * the end; {@link NativeBridge#key} reads the call's key from it.
         */
        Object decode(byte[] answer, int offset) throws Exception;
    }

    /**
     * One native tool (a validated name + policy + timeout), freed when its owner is unreachable.
     */
    static final class NativeTool {
        final String name;
        final KeyStrategy strategy;
        final long handle;

        NativeTool(String name, KeyStrategy strategy, long handle) {
            this.name = name;
            this.strategy = strategy;
            this.handle = handle;
        }
    }

    /**
     * What {@link #invoke} saw of one call, for a face that reports it (an MCP result's {@code
     * _meta}): the call's key, and whether the answer was read from a record.
     */
    static final class Trace {
        String key;
        boolean replayed;

        void replay(byte[] answer) {
            key = NativeBridge.key(answer);
            replayed = true;
        }
    }

    /**
     * {@link #invoke(NativeIdempotencyStore, NativeTool, NativeContext, JsonInput, JsonInput,
     * String, Body, ResultCodec, Trace)} untraced.
     */
    static Object invoke(
            NativeIdempotencyStore store,
            NativeTool tool,
            NativeContext nativeContext,
            JsonInput input,
            JsonInput payload,
            String suppliedKey,
            Body body,
            ResultCodec codec) {
        return invoke(store, tool, nativeContext, input, payload, suppliedKey, body, codec, null);
    }

    /**
     * Calls {@code body} at most once per key.
     *
     * @param input the JSON input (HASH_INPUT), the explicit key as a JSON string (EXPLICIT), or
     *     null
     * @param payload EXPLICIT: the call's whole input as JSON, whose fingerprint the record keeps
     *     (a repeat of the key with another one is refused by the core); null otherwise
     */
    static Object invoke(
            NativeIdempotencyStore store,
            NativeTool tool,
            NativeContext nativeContext,
            JsonInput input,
            JsonInput payload,
            String suppliedKey,
            Body body,
            ResultCodec codec,
            Trace trace) {
        byte[] answer;
        byte[] bytes = input == null ? null : input.bytes;
        int length = input == null ? 0 : input.length;
        long storeHandle = store.handle.acquire();
        try {
            answer =
                    payload == null
                            ? NativeBridge.begin(
                                    storeHandle,
                                    tool.handle,
                                    nativeContext.handle,
                                    bytes,
                                    length,
                                    STEP_BUDGET_MS)
                            : NativeBridge.beginWithPayload(
                                    storeHandle,
                                    tool.handle,
                                    nativeContext.handle,
                                    bytes,
                                    length,
                                    payload.bytes,
                                    payload.length,
                                    STEP_BUDGET_MS);
        } finally {
            store.handle.release();
            Reference.reachabilityFence(store);
            Reference.reachabilityFence(tool);
            Reference.reachabilityFence(nativeContext);
            // Also when the core refused the call (a held failure, a payload mismatch): its
            // event reaches the listeners with its own answer, not with a later call's.
            store.deliverEvents();
        }
        if (NativeBridge.step(answer) == NativeBridge.STEP_REPLAY) {
            if (trace != null) {
                trace.replay(answer);
            }
            return decode(tool, codec, answer);
        }
        long attempt = NativeBridge.attempt(answer);
        boolean reported = false;
        try {
            while (true) {
                while (NativeBridge.step(answer) == NativeBridge.STEP_PENDING) {
                    if (Thread.interrupted()) {
                        Thread.currentThread().interrupt();
                        throw new InProgressException(
                                "`"
                                        + tool.name
                                        + "` was interrupted while waiting for another call"
                                        + " holding the same key; nothing was run",
                                tool.name,
                                NativeBridge.key(answer));
                    }
                    try {
                        answer = NativeBridge.advance(attempt, STEP_BUDGET_MS);
                    } finally {
                        store.deliverEvents();
                    }
                    if (NativeBridge.step(answer) == NativeBridge.STEP_REPLAY) {
                        reported = true;
                        if (trace != null) {
                            trace.replay(answer);
                        }
                        return decode(tool, codec, answer);
                    }
                }
                String key = NativeBridge.key(answer);
                if (trace != null) {
                    trace.key = key;
                }
                IdempotencyContext context =
                        new IdempotencyContext(
                                tool.name,
                                key,
                                suppliedKey,
                                nativeContext.tenant,
                                nativeContext.run,
                                tool.strategy);
                Object result;
                context.enter();
                try {
                    result = body.run(context);
                } catch (NotRun refused) {
                    reported = true;
                    report(tool, attempt, NativeBridge.BODY_NEVER_RAN, null, null, null, null);
                    throw refused.reason;
                } catch (OutcomeUnknown unknown) {
                    reported = true;
                    try {
                        report(tool, attempt, NativeBridge.BODY_CANCELLED, null, null, null, null);
                    } catch (IdempotencyTimeoutException timeout) {
                        // The core's timeout; the caller gets the face's own account of it (what
                        // was sent, what is unknown), which the reason is.
                    }
                    throw unknown.reason;
                } catch (Throwable thrown) {
                    reported = true;
                    try {
                        WebServiceException exchange =
                                thrown instanceof WebServiceException
                                                && ((WebServiceException) thrown).exchange() >= 0
                                        ? (WebServiceException) thrown
                                        : null;
                        if (exchange != null) {
                            // A failed exchange with an upstream: the core decides from what was
                            // seen whether it is sent again (SPEC v1.1 rule 12).
                            detail(
                                    tool,
                                    NativeBridge.reportExchange(
                                            attempt,
                                            thrown.getClass().getName(),
                                            String.valueOf(thrown.getMessage()),
                                            Registrar.typeNamesOf(thrown),
                                            exchange.exchange(),
                                            exchange.status(),
                                            exchange.keySent()));
                        } else {
                            report(
                                    tool,
                                    attempt,
                                    NativeBridge.BODY_FAILED,
                                    null,
                                    thrown.getClass().getName(),
                                    String.valueOf(thrown.getMessage()),
                                    Registrar.typeNamesOf(thrown));
                        }
                    } catch (IdempotencyTimeoutException
                            | IndeterminateOutcomeException
                            | PayloadMismatchException answered) {
                        // The core's answer instead of the body's exception: the timeout, a held
                        // failure (EFFECTFUL), or the upstream's payload mismatch; the body's
                        // exception is its cause.
                        if (answered.getCause() == null) {
                            answered.initCause(thrown);
                        }
                        throw answered;
                    }
                    long pause = NativeBridge.attemptRetryPause(attempt);
                    if (pause < 0) {
                        throw rethrow(thrown);
                    }
                    // The core retries this failure (SPEC v1.1 rule 8), or sends the request
                    // again keeping the claim (rule 12): pause, then advance the same call.
                    reported = false;
                    try {
                        Thread.sleep(pause);
                    } catch (InterruptedException interrupted) {
                        Thread.currentThread().interrupt();
                        throw rethrow(thrown);
                    }
                    answer = NativeBridge.advance(attempt, STEP_BUDGET_MS);
                    store.deliverEvents();
                    if (NativeBridge.step(answer) == NativeBridge.STEP_REPLAY) {
                        reported = true;
                        if (trace != null) {
                            trace.replay(answer);
                        }
                        return decode(tool, codec, answer);
                    }
                    continue;
                } finally {
                    context.exit();
                }
                reported = true;
                byte[] json;
                try {
                    json = codec.encode(result);
                } catch (Exception unencodable) {
                    // SPEC v1.1 rule 6: reported to the core as a failure of the body, which
                    // settles it.
                    String type = ResultTypes.describe(codec.value(result), codec.type());
                    UnencodableResultException failure =
                            new UnencodableResultException(
                                    "`"
                                            + tool.name
                                            + "` returned a "
                                            + type
                                            + " that could not be written as JSON, so it was not recorded and the call"
                                            + " counts as failed: "
                                            + unencodable.getMessage(),
                                    tool.name,
                                    key,
                                    type,
                                    unencodable);
                    try {
                        report(
                                tool,
                                attempt,
                                NativeBridge.BODY_UNENCODABLE,
                                null,
                                failure.getClass().getName(),
                                failure.getMessage(),
                                null);
                    } catch (IdempotencyTimeoutException | IndeterminateOutcomeException answered) {
                        answered.initCause(failure);
                        throw answered;
                    }
                    throw failure;
                }
                report(tool, attempt, NativeBridge.BODY_SUCCEEDED, json, null, null, null);
                return result;
            }
        } finally {
            if (!reported) {
                // Given up before the body ran (e.g. interrupted while waiting): nothing ran.
                NativeBridge.report(
                        attempt, NativeBridge.BODY_NEVER_RAN, null, 0, null, null, null);
            }
            NativeBridge.attemptDestroy(attempt);
            store.deliverEvents();
        }
    }

    /**
     * Reports what the body did; the core settles the claim, logs nothing, and throws the timeout
     * when the body was running at the deadline. A detail answered is an outcome not settled yet.
     */
    private static void report(
            NativeTool tool,
            long attempt,
            int body,
            byte[] json,
            String errorType,
            String message,
            String[] types) {
        detail(
                tool,
                NativeBridge.report(
                        attempt,
                        body,
                        json,
                        json == null ? 0 : json.length,
                        errorType,
                        message,
                        types));
    }

    /** Logs an outcome the core has not settled yet (a detail answered by a report). */
    private static void detail(NativeTool tool, String detail) {
        if (detail != null) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "idemkit: the outcome of `{0}` is not settled yet: {1}",
                    tool.name,
                    detail);
        }
    }

    private static Object decode(NativeTool tool, ResultCodec codec, byte[] answer) {
        try {
            return codec.decode(answer, NativeBridge.resultOffset(answer));
        } catch (Exception e) {
            throw new IdempotencyException(
                    ErrorKind.INTERNAL,
                    "the remembered result of `"
                            + tool.name
                            + "` does not read back as its declared type: "
                            + e.getMessage(),
                    tool.name,
                    NativeBridge.key(answer),
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
        return new UndeclaredThrowableException(
                thrown, thrown.getClass().getName() + ": " + thrown.getMessage());
    }
}
