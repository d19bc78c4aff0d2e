package dev.idemkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Results cross the store as JSON (SPEC v1.1 rule 6): java.time and Optional results are recorded
 * and replayed; a declared type that cannot round-trip is refused at registration; a value that
 * fails to encode at run time is settled as a failure of the body, never left to become abandoned.
 */
class ResultEncodingTest {
    private static final Duration PROMPT = Duration.ofSeconds(20);
    private final InMemoryIdempotencyStore store = new InMemoryIdempotencyStore();

    @AfterEach
    void close() {
        store.close();
    }

    private ToolDispatcher dispatcher(Object... tools) {
        return ToolDispatcher.builder().tools(tools).store(store).build();
    }

    /** A bean mixing java.time and Optional members, and an Object member (any JSON). */
    public static class Itinerary {
        public Instant departs;
        public LocalDate day;
        public Optional<String> seat;
        public Object extra;

        public Itinerary() {}

        Itinerary(Instant departs, LocalDate day, Optional<String> seat, Object extra) {
            this.departs = departs;
            this.day = day;
            this.seat = seat;
            this.extra = extra;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Itinerary)) {
                return false;
            }
            Itinerary other = (Itinerary) o;
            return java.util.Objects.equals(departs, other.departs)
                    && java.util.Objects.equals(day, other.day)
                    && java.util.Objects.equals(seat, other.seat)
                    && java.util.Objects.equals(extra, other.extra);
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(departs, day, seat, extra);
        }
    }

    static class TimeTools {
        static final Instant DEPARTS = Instant.ofEpochSecond(1_796_000_000L, 123_456_789);
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "departs")
        @Idempotent(leaseSeconds = 2)
        public Instant departs(String flight) {
            runs.incrementAndGet();
            return DEPARTS;
        }

        @Tool(name = "day")
        @Idempotent(leaseSeconds = 2)
        public LocalDate day(String flight) {
            runs.incrementAndGet();
            return LocalDate.of(2026, 12, 1);
        }

        @Tool(name = "seat")
        @Idempotent(leaseSeconds = 2)
        public Optional<String> seat(String flight) {
            runs.incrementAndGet();
            return flight.equals("none") ? Optional.empty() : Optional.of("12A");
        }

        @Tool(name = "zoned")
        @Idempotent(leaseSeconds = 2)
        public java.time.ZonedDateTime zoned(String flight) {
            runs.incrementAndGet();
            return java.time.ZonedDateTime.of(
                    2026, 12, 1, 9, 30, 0, 0, java.time.ZoneId.of("Europe/Paris"));
        }

        @Tool(name = "offset")
        @Idempotent(leaseSeconds = 2)
        public java.time.OffsetDateTime offset(String flight) {
            runs.incrementAndGet();
            return java.time.OffsetDateTime.of(
                    2026, 12, 1, 9, 30, 0, 0, java.time.ZoneOffset.ofHours(-5));
        }

        @Tool(name = "layover")
        @Idempotent(leaseSeconds = 2)
        public Duration layover(String flight) {
            runs.incrementAndGet();
            return Duration.ofMinutes(95);
        }

        @Tool(name = "itinerary")
        @Idempotent(leaseSeconds = 2)
        public Itinerary itinerary(String flight) {
            runs.incrementAndGet();
            return new Itinerary(
                    DEPARTS,
                    LocalDate.of(2026, 12, 1),
                    Optional.of("12A"),
                    Map.of("meal", List.of("veg")));
        }
    }

    @Test
    void java_time_and_optional_results_are_recorded_and_replayed_equal() {
        TimeTools t = new TimeTools();
        ToolDispatcher d = dispatcher(t);
        Object[][] calls = {
            {"departs", "BA117", TimeTools.DEPARTS},
            {"day", "BA117", LocalDate.of(2026, 12, 1)},
            {"seat", "BA117", Optional.of("12A")},
            {"seat", "none", Optional.empty()},
            {
                "zoned",
                "BA117",
                java.time.ZonedDateTime.of(
                        2026, 12, 1, 9, 30, 0, 0, java.time.ZoneId.of("Europe/Paris"))
            },
            {
                "offset",
                "BA117",
                java.time.OffsetDateTime.of(
                        2026, 12, 1, 9, 30, 0, 0, java.time.ZoneOffset.ofHours(-5))
            },
            {"layover", "BA117", Duration.ofMinutes(95)},
            {
                "itinerary",
                "BA117",
                new Itinerary(
                        TimeTools.DEPARTS,
                        LocalDate.of(2026, 12, 1),
                        Optional.of("12A"),
                        Map.of("meal", List.of("veg")))
            },
        };
        for (Object[] call : calls) {
            int before = t.runs.get();
            Map<String, Object> input = Map.of("flight", call[1]);
            Object first = d.call((String) call[0], input);
            Object replay =
                    assertTimeoutPreemptively(
                            PROMPT,
                            () -> d.call((String) call[0], input),
                            call[0] + ": a repeat must be answered from the record, promptly");
            assertEquals(call[2], first, call[0] + " first call");
            assertEquals(
                    call[2], replay, call[0] + " replay reads back equal, as the declared type");
            assertEquals(before + 1, t.runs.get(), call[0] + " ran once");
        }
        assertEquals(0L, store.eventCounts().get("indeterminate"));
    }

    /** No properties Jackson can see: nothing to write. */
    public static class Opaque {
        private final int secret = 7;

        @Override
        public String toString() {
            return "Opaque" + secret;
        }
    }

    /** Writable, but no creator Jackson can use to read it back. */
    public static class WriteOnly {
        private final String id;

        private WriteOnly(String id, int version) {
            this.id = id + version;
        }

        public String getId() {
            return id;
        }
    }

    static class OpaqueTool {
        @Tool(name = "opaque_result")
        @Idempotent
        public Opaque opaque(String id) {
            return new Opaque();
        }
    }

    static class WriteOnlyTool {
        @Tool(name = "write_only_result")
        @Idempotent
        public WriteOnly writeOnly(String id) {
            return new WriteOnly(id, 1);
        }
    }

    static class NestedOpaqueTool {
        @Tool(name = "opaque_list")
        @Idempotent
        public List<Opaque> opaqueList(String id) {
            return List.of(new Opaque());
        }
    }

    @Test
    void a_result_type_that_cannot_round_trip_is_refused_at_registration_naming_tool_and_type() {
        Object[][] cases = {
            {new OpaqueTool(), "opaque_result", Opaque.class},
            {new WriteOnlyTool(), "write_only_result", WriteOnly.class},
            {new NestedOpaqueTool(), "opaque_list", Opaque.class},
        };
        for (Object[] c : cases) {
            IllegalArgumentException e =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> dispatcher(c[0]),
                            c[1] + " must be refused when it is registered");
            String message = e.getMessage();
            assertTrue(message.contains("`" + c[1] + "`"), message);
            assertTrue(message.contains(((Class<?>) c[2]).getName()), message);
        }
    }

    @Test
    void a_mapper_given_without_the_modules_refuses_java_time_results_naming_the_module() {
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                ToolDispatcher.builder()
                                        .tools(new TimeTools())
                                        .store(store)
                                        .objectMapper(
                                                new com.fasterxml.jackson.databind.ObjectMapper())
                                        .build());
        assertTrue(
                e.getMessage().contains("java.time.") && e.getMessage().contains("JavaTimeModule"),
                e.getMessage());
    }

    @Test
    void object_typed_results_and_members_are_fine() {
        TimeTools t = new TimeTools();
        dispatcher(
                t,
                new Object() {
                    @Tool(name = "anything")
                    @Idempotent
                    public Object anything(String id) {
                        return Map.of("id", id);
                    }
                });
    }

    /** Jackson writes it through a getter that refuses one value. */
    public static class Touchy {
        public String name;

        public Touchy() {}

        Touchy(String name) {
            this.name = name;
        }

        public String getName() {
            if (name.equals("boom")) {
                throw new IllegalStateException("no name today");
            }
            return name;
        }
    }

    static class TouchyTools {
        final AtomicInteger runs = new AtomicInteger();

        @Tool(name = "touchy")
        @Idempotent(leaseSeconds = 2)
        public Touchy touchy(String name) {
            runs.incrementAndGet();
            return new Touchy(name);
        }

        @Tool(name = "touchy_cached")
        @Idempotent(leaseSeconds = 2, cacheFailures = true)
        public Touchy touchyCached(String name) {
            runs.incrementAndGet();
            return new Touchy(name);
        }
    }

    @Test
    void a_value_that_fails_to_encode_releases_the_key_and_the_caller_gets_the_error() {
        TouchyTools t = new TouchyTools();
        ToolDispatcher d = dispatcher(t);
        for (int attempt = 1; attempt <= 2; attempt++) {
            IdempotencyException e =
                    assertTimeoutPreemptively(
                            PROMPT,
                            () ->
                                    assertThrows(
                                            IdempotencyException.class,
                                            () -> d.call("touchy", Map.of("name", "boom"))),
                            "attempt " + attempt);
            assertFalse(
                    e instanceof IndeterminateOutcomeException, "attempt " + attempt + ": " + e);
            assertEquals("touchy", e.tool());
            assertTrue(e.getMessage().contains("`touchy`"), e.getMessage());
            assertTrue(e.getMessage().contains(Touchy.class.getName()), e.getMessage());
            assertEquals(
                    attempt, t.runs.get(), "the key was left free, so the next call runs again");
        }
        // Another value of the same type is recorded as usual.
        assertEquals("fine", ((Touchy) d.call("touchy", Map.of("name", "fine"))).name);
        assertEquals("fine", ((Touchy) d.call("touchy", Map.of("name", "fine"))).name);
        assertEquals(3, t.runs.get());
        assertEquals(0L, store.eventCounts().get("indeterminate"));
    }

    @Test
    void with_cache_failures_a_value_that_fails_to_encode_is_recorded_as_a_failure() {
        TouchyTools t = new TouchyTools();
        ToolDispatcher d = dispatcher(t);
        IdempotencyException first =
                assertThrows(
                        IdempotencyException.class,
                        () -> d.call("touchy_cached", Map.of("name", "boom")));
        assertFalse(first instanceof IndeterminateOutcomeException, String.valueOf(first));
        CachedFailureException repeat =
                assertTimeoutPreemptively(
                        PROMPT,
                        () ->
                                assertThrows(
                                        CachedFailureException.class,
                                        () -> d.call("touchy_cached", Map.of("name", "boom"))));
        assertEquals(first.getClass().getName(), repeat.originalType());
        assertEquals(first.getMessage(), repeat.originalMessage());
        assertEquals(1, t.runs.get());
    }

    /** Web-service actions read their response as the declared type and record it the same way. */
    public static class Flights {
        @WebService(
                name = "ws_departs",
                endpoint = "/departs",
                method = HttpMethod.GET,
                paramType = ParamType.QUERY)
        @Idempotent(leaseSeconds = 2)
        public Instant departs(String flight) {
            return null;
        }

        @WebService(name = "ws_touchy", endpoint = "/touchy", method = HttpMethod.POST)
        @Idempotent(leaseSeconds = 2)
        public Touchy touchy(String flight) {
            return null;
        }
    }

    public static class OpaqueFlights {
        @WebService(name = "ws_opaque", endpoint = "/opaque")
        @Idempotent
        public Opaque opaque(String flight) {
            return null;
        }
    }

    @Test
    void web_service_actions_record_java_time_and_settle_unencodable_values_as_failures()
            throws Exception {
        try (WebServiceTestServer server = new WebServiceTestServer()) {
            server.script(
                    r ->
                            r.rawPath.equals("/departs")
                                    ? WebServiceTestServer.Reply.json(
                                            200, "\"2026-12-01T10:15:30.5Z\"")
                                    : WebServiceTestServer.Reply.json(200, "{\"name\":\"boom\"}"));
            WebServiceExecutor ws =
                    WebServiceExecutor.builder()
                            .store(store)
                            .baseUri(server.baseUri())
                            .roles(new Flights())
                            .build();
            Instant expected = Instant.parse("2026-12-01T10:15:30.5Z");
            assertEquals(expected, ws.invoke("ws_departs", Map.of("flight", "BA117")));
            assertEquals(
                    expected,
                    assertTimeoutPreemptively(
                            PROMPT, () -> ws.invoke("ws_departs", Map.of("flight", "BA117"))));
            assertEquals(1, server.count());

            for (int attempt = 1; attempt <= 2; attempt++) {
                IdempotencyException e =
                        assertTimeoutPreemptively(
                                PROMPT,
                                () ->
                                        assertThrows(
                                                IdempotencyException.class,
                                                () ->
                                                        ws.invoke(
                                                                "ws_touchy",
                                                                Map.of("flight", "x"))));
                assertFalse(e instanceof IndeterminateOutcomeException, String.valueOf(e));
                assertTrue(
                        e.getMessage().contains("`ws_touchy`")
                                && e.getMessage().contains(Touchy.class.getName()),
                        e.getMessage());
                assertEquals(
                        1 + attempt,
                        server.count(),
                        "the key was left free, so the next call sends again");
            }

            IllegalArgumentException refused =
                    assertThrows(
                            IllegalArgumentException.class, () -> ws.register(new OpaqueFlights()));
            assertTrue(
                    refused.getMessage().contains("`ws_opaque`")
                            && refused.getMessage().contains(Opaque.class.getName()),
                    refused.getMessage());
        }
    }
}
