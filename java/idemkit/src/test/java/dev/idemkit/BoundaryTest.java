package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The JNI boundary itself: panics, every error kind, handles on 0, close racing calls. */
class BoundaryTest {
    @Test
    void a_native_panic_becomes_an_unchecked_exception_and_the_jvm_lives_on() {
        IdempotencyException e = assertThrows(IdempotencyException.class, NativeTestSupport::panic);
        assertEquals(ErrorKind.INTERNAL, e.kind());
        assertTrue(e.getMessage().contains("panic in idemkit native code"), e.getMessage());
        // The library still works afterwards.
        assertDoesNotThrow(() -> new InMemoryIdempotencyStore().close());
    }

    @ParameterizedTest
    @EnumSource(ErrorKind.class)
    void each_error_kind_maps_to_its_exception_class(ErrorKind kind) {
        RuntimeException e =
                assertThrows(
                        RuntimeException.class, () -> NativeTestSupport.throwKind(kind.code()));
        Class<? extends RuntimeException> expected;
        switch (kind) {
            case INVALID_KEY:
                expected = InvalidKeyException.class;
                break;
            case CONFIGURATION:
                expected = IllegalArgumentException.class;
                break;
            case CACHED_FAILURE:
                expected = CachedFailureException.class;
                break;
            case FAIL_FAST:
                expected = FailFastException.class;
                break;
            case IN_PROGRESS:
                expected = InProgressException.class;
                break;
            case INDETERMINATE:
                expected = IndeterminateOutcomeException.class;
                break;
            case STORE_UNAVAILABLE:
                expected = StoreUnavailableException.class;
                break;
            case OUTCOME_TOO_LARGE:
                expected = OutcomeTooLargeException.class;
                break;
            case TIMEOUT:
                expected = IdempotencyTimeoutException.class;
                break;
            case PAYLOAD_MISMATCH:
                expected = PayloadMismatchException.class;
                break;
            default:
                expected = IdempotencyException.class;
        }
        assertEquals(expected, e.getClass());
        if (e instanceof IdempotencyException) {
            IdempotencyException ie = (IdempotencyException) e;
            assertEquals(kind, ie.kind());
            if (kind != ErrorKind.INTERNAL) {
                assertEquals("test_tool", ie.tool());
            }
        }
        if (e instanceof CachedFailureException) {
            assertEquals("java.io.IOException", ((CachedFailureException) e).originalType());
            assertEquals("disk full", ((CachedFailureException) e).originalMessage());
            assertEquals("0".repeat(64), ((CachedFailureException) e).key());
        }
    }

    @Test
    void an_unknown_code_is_refused_as_illegal_argument() {
        assertThrows(IllegalArgumentException.class, () -> NativeTestSupport.throwKind(99));
    }

    @Test
    void calls_on_handle_0_throw_null_pointer_and_destroys_ignore_it() {
        NativeLibrary.load();
        assertThrows(NullPointerException.class, () -> NativeBridge.advance(0, 1));
        assertThrows(NullPointerException.class, () -> NativeBridge.storeForget(0, null));
        assertThrows(NullPointerException.class, () -> NativeBridge.begin(0, 0, 0, null, 0, 1));
        assertDoesNotThrow(() -> NativeBridge.storeDestroy(0));
        assertDoesNotThrow(() -> NativeBridge.toolDestroy(0));
        assertDoesNotThrow(() -> NativeBridge.attemptDestroy(0));
    }

    @Test
    void store_close_is_idempotent_and_later_calls_are_refused() {
        InMemoryIdempotencyStore store = new InMemoryIdempotencyStore();
        store.close();
        store.close();
        assertTrue(store.isClosed());
        assertThrows(IllegalStateException.class, () -> store.forget(null));
        assertThrows(
                IllegalStateException.class, () -> ToolDispatcher.builder().store(store).build());
    }

    static class Slow {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "slow")
        @Idempotent
        public int slow(int n) throws InterruptedException {
            runs.incrementAndGet();
            Thread.sleep(2);
            return n;
        }
    }

    @Test
    void closing_the_store_while_calls_are_in_flight_frees_nothing_under_them() throws Exception {
        for (int round = 0; round < 5; round++) {
            InMemoryIdempotencyStore store = new InMemoryIdempotencyStore();
            ToolDispatcher dispatcher =
                    ToolDispatcher.builder().tools(new Slow()).store(store).build();
            ExecutorService pool = Executors.newFixedThreadPool(8);
            Future<?>[] futures = new Future<?>[64];
            for (int i = 0; i < futures.length; i++) {
                int n = i;
                futures[i] = pool.submit(() -> dispatcher.call("slow", Map.of("n", n)));
            }
            Thread.sleep(3);
            store.close();
            for (Future<?> f : futures) {
                try {
                    f.get(10, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException e) {
                    // Calls that start after close are refused cleanly.
                    assertInstanceOf(IllegalStateException.class, e.getCause());
                }
            }
            pool.shutdown();
        }
    }
}
