package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Input that does not bind is an {@link InvalidToolInputException}, never a silently changed value:
 * a fraction for an integer parameter is refused (at any depth), and the tool's own {@link
 * IllegalArgumentException} stays its own.
 */
class InputBindingTest {
    private final InMemoryIdempotencyStore store = new InMemoryIdempotencyStore();

    @AfterEach
    void close() {
        store.close();
    }

    static class Hotel {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "book_room")
        @Idempotent
        public long bookRoom(long nights, Integer guests) {
            runs.incrementAndGet();
            if (nights > 30) {
                throw new IllegalArgumentException("stays are 30 nights at most");
            }
            return nights * 100 + (guests == null ? 0 : guests);
        }

        @Tool(name = "measure")
        @Idempotent
        public String measure(double metres, Float kilos) {
            runs.incrementAndGet();
            return metres + "/" + kilos;
        }

        @Tool(name = "rooms")
        @Idempotent
        public long rooms(List<Long> numbers) {
            runs.incrementAndGet();
            return numbers.stream().mapToLong(Long::longValue).sum();
        }
    }

    @Test
    void a_fraction_for_an_integer_parameter_is_refused_not_truncated() {
        Hotel hotel = new Hotel();
        try (ToolDispatcher d = ToolDispatcher.builder().tools(hotel).store(store).build()) {
            InvalidToolInputException text =
                    assertThrows(
                            InvalidToolInputException.class,
                            () -> d.call("book_room", "{\"nights\":12.5}"));
            assertEquals("book_room", text.tool());
            assertEquals("nights", text.argument());
            assertTrue(text.getMessage().contains("12.5"), text.getMessage());
            assertTrue(text.getMessage().contains("not a whole number"), text.getMessage());

            InvalidToolInputException map =
                    assertThrows(
                            InvalidToolInputException.class,
                            () -> d.call("book_room", Map.of("nights", 2, "guests", 1.5)));
            assertEquals("guests", map.argument());
            assertThrows(
                    InvalidToolInputException.class,
                    () -> d.call("book_room", Map.of("nights", new BigDecimal("2.0001"))));
            assertThrows(
                    InvalidToolInputException.class,
                    () -> d.call("book_room", "{\"nights\":1e400}"));
            InvalidToolInputException nested =
                    assertThrows(
                            InvalidToolInputException.class,
                            () -> d.call("rooms", "{\"numbers\":[1,2.5]}"));
            assertEquals("numbers", nested.argument());
            assertEquals(0, hotel.runs.get(), "no body ran");

            // A whole number written as a decimal is that number (and the same key as 12).
            assertEquals(1200L, d.call("book_room", "{\"nights\":12.0}"));
            assertEquals(1200L, d.call("book_room", Map.of("nights", 12.0d)));
            assertEquals(1200L, d.call("book_room", "{\"nights\":1.2e1}"));
            assertEquals(1, hotel.runs.get());
            assertEquals(203L, d.call("book_room", Map.of("nights", 2, "guests", 3L)));
        }
    }

    @Test
    void a_number_a_double_or_float_cannot_hold_as_written_is_refused_not_rounded() {
        Hotel hotel = new Hotel();
        try (ToolDispatcher d = ToolDispatcher.builder().tools(hotel).store(store).build()) {
            // The key is made of the exact decimal; the body would get another number.
            for (String lossy :
                    List.of(
                            "{\"metres\":9007199254740993}",
                            "{\"metres\":0.10000000000000000555}",
                            "{\"metres\":1e400}",
                            "{\"metres\":1,\"kilos\":1e300}",
                            "{\"metres\":1,\"kilos\":16777217}")) {
                InvalidToolInputException e =
                        assertThrows(
                                InvalidToolInputException.class,
                                () -> d.call("measure", lossy),
                                lossy);
                assertEquals("measure", e.tool());
                assertTrue(
                        e.argument().equals("metres") || e.argument().equals("kilos"),
                        e.argument());
                assertTrue(e.getMessage().contains("refused rather than rounded"), e.getMessage());
            }
            InvalidToolInputException overflow =
                    assertThrows(
                            InvalidToolInputException.class,
                            () -> d.call("measure", "{\"metres\":1,\"kilos\":1e300}"));
            assertEquals("kilos", overflow.argument());
            assertTrue(overflow.getMessage().contains("1E+300"), overflow.getMessage());
            InvalidToolInputException fromMap =
                    assertThrows(
                            InvalidToolInputException.class,
                            () -> d.call("measure", Map.of("metres", 9007199254740993L)));
            assertEquals("metres", fromMap.argument());
            assertEquals(0, hotel.runs.get(), "no body ran");

            // The shortest decimal of the value, in any spelling the key takes as equal, binds.
            assertEquals("0.1/null", d.call("measure", "{\"metres\":0.1}"));
            assertEquals("100.0/2.0", d.call("measure", "{\"metres\":1e2,\"kilos\":2.0}"));
            assertEquals("100.0/2.0", d.call("measure", "{\"metres\":100,\"kilos\":2}"));
            assertEquals("0.1/0.1", d.call("measure", "{\"metres\":0.1,\"kilos\":0.1}"));
            assertEquals("0.1/null", d.call("measure", Map.of("metres", 0.1d)));
            assertEquals(3, hotel.runs.get());
        }
    }

    @Test
    void a_refused_input_runs_nothing_and_releases_the_claim() {
        Hotel hotel = new Hotel();
        try (ToolDispatcher d = ToolDispatcher.builder().tools(hotel).store(store).build()) {
            assertThrows(
                    InvalidToolInputException.class,
                    () -> d.call("book_room", "{\"nights\":2, \"guests\":2.5}"));
            InvalidToolInputException unknown =
                    assertThrows(
                            InvalidToolInputException.class,
                            () -> d.call("book_room", "{\"nihgts\":2}"));
            assertEquals("nihgts", unknown.argument());
            InvalidToolInputException missing =
                    assertThrows(
                            InvalidToolInputException.class,
                            () -> d.call("book_room", "{\"guests\":2}"));
            assertEquals("nights", missing.argument());
            InvalidToolInputException notObject =
                    assertThrows(InvalidToolInputException.class, () -> d.call("book_room", "[]"));
            assertEquals("book_room", notObject.tool());
            assertEquals(0, hotel.runs.get());
        }
    }

    @Test
    void the_tools_own_illegal_argument_is_not_an_input_refusal() {
        Hotel hotel = new Hotel();
        try (ToolDispatcher d = ToolDispatcher.builder().tools(hotel).store(store).build()) {
            IllegalArgumentException own =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> d.call("book_room", "{\"nights\":31}"));
            assertSame(IllegalArgumentException.class, own.getClass());
            assertEquals("stays are 30 nights at most", own.getMessage());
            assertEquals(1, hotel.runs.get());
        }
    }
}
