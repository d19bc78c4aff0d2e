package dev.idemkit;

/**
 * A call's {@code timeoutMs} passed while its body ran; {@link #tool()} and {@link #key()} name the
 * call. What happened to the claim depends on whether the body finished:
 *
 * <ul>
 *   <li>A tool body returned after the deadline: it ran to its end on the calling thread (Java
 *       cannot stop it safely) and its outcome was recorded, so a retry gets the remembered result
 *       without running again.
 *   <li>A {@link WebService} exchange was cut at the deadline (no response in time): the request
 *       may or may not have reached the service, so the outcome is unknown and, as SPEC §3 says of
 *       a body that overruns, the claim stays in progress: a retry waits for it, and once its lease
 *       ends gets {@link IndeterminateOutcomeException} until the key is settled — in-process with
 *       {@link IdempotencyStore#releaseKey(String, String)} or {@link IdempotencyStore#resolveKey},
 *       or with {@code idemkit resolve} — or its record expires. For an action declaring {@link
 *       WebService#honorsIdempotencyKey()}, a call after the lease takes the claim over instead and
 *       sends the request again under the same key. (With {@code UUID} or {@code NONE} there is no
 *       claim.) A response that arrives just after the deadline is recorded as for a tool.
 * </ul>
 */
public class IdempotencyTimeoutException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    /**
     * idemkit raises it; public so that code which wraps or translates idemkit's errors can make
     * one.
     *
     * @param message what happened and, where there is one, the fix
     * @param tool the tool or action name, or {@code null}
     * @param key the 64-hex key, or {@code null}
     */
    public IdempotencyTimeoutException(String message, String tool, String key) {
        super(ErrorKind.TIMEOUT, message, tool, key);
    }

    /**
     * idemkit raises it; public so that code which wraps or translates idemkit's errors can make
     * one. With a cause: the transport's timeout.
     *
     * @param message what happened and, where there is one, the fix
     * @param tool the tool or action name, or {@code null}
     * @param key the 64-hex key, or {@code null}
     * @param cause what ended the wait, or {@code null}
     */
    public IdempotencyTimeoutException(String message, String tool, String key, Throwable cause) {
        super(ErrorKind.TIMEOUT, message, tool, key, cause);
    }
}
