package dev.idemkit.micrometer;

import dev.idemkit.IdempotencyEvent;
import dev.idemkit.IdempotencyListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * Counts idemkit's events in a Micrometer {@link MeterRegistry}: a listener to give a {@code
 * ToolDispatcher}, an {@code IdempotentOperation} or a whole store ({@code
 * store.addListener(metrics)}). No Spring needed.
 *
 * <p>Counter {@value #EVENTS}, one per event kind and tool, tagged {@code kind} (the core's name:
 * {@code acquired}, {@code deduplicated}, {@code waited}, ...), {@code tool} and {@code outcome}
 * (see {@link #outcome}); events the binding dropped are counted in {@value #DROPPED}; timer
 * {@value #WAIT}, tagged {@code tool}, records how long each waiting call waited. Extra tags (an
 * application name) are added to every meter.
 *
 * <p>Thread-safe: events arrive on the calling threads.
 */
public final class IdempotencyMetrics implements IdempotencyListener {
    /** The counter of events. */
    public static final String EVENTS = "idemkit.events";

    /** The counter of events dropped before delivery (none were delivered for a while). */
    public static final String DROPPED = "idemkit.events.dropped";

    /**
     * The timer of waits: how long calls waited for another caller holding their key (the {@code
     * waited} event's length), tagged {@code tool}.
     */
    public static final String WAIT = "idemkit.wait";

    private final MeterRegistry registry;
    private final Tags tags;

    /**
     * Counts into {@code registry}.
     *
     * @param registry the registry
     */
    public IdempotencyMetrics(MeterRegistry registry) {
        this(registry, Tags.empty());
    }

    /**
     * Counts into {@code registry}, with {@code tags} on every meter.
     *
     * @param registry the registry
     * @param tags tags added to every meter
     */
    public IdempotencyMetrics(MeterRegistry registry, Iterable<Tag> tags) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.tags = Tags.of(Objects.requireNonNull(tags, "tags"));
    }

    /**
     * What an event says about the call, the {@code outcome} tag: {@code executed} (the body runs),
     * {@code deduplicated} (a remembered outcome answered), {@code waited} (the call waited for
     * another caller), {@code refused} (fail-fast, a wait past the deadline, a payload mismatch),
     * {@code failed} (a failure released, retried or held as indeterminate), {@code error} (the
     * store failed, or an outcome could not be recorded), {@code other}.
     *
     * @param kind the event's kind
     * @return the outcome tag's value
     */
    public static String outcome(IdempotencyEvent.Kind kind) {
        switch (kind) {
            case ACQUIRED:
                return "executed";
            case DEDUPLICATED:
                return "deduplicated";
            case WAITED:
                return "waited";
            case WAIT_TIMED_OUT:
            case FAILED_FAST:
            case PAYLOAD_MISMATCH:
                return "refused";
            case RELEASED:
            case RETRIED:
            case INDETERMINATE:
                return "failed";
            case STORE_ERROR:
            case RECORD_FAILED:
                return "error";
            default:
                return "other";
        }
    }

    @Override
    public void onEvent(IdempotencyEvent event) {
        if (event.kind() == IdempotencyEvent.Kind.DROPPED) {
            long dropped = 1;
            try {
                dropped = Long.parseLong(String.valueOf(event.detail()));
            } catch (NumberFormatException notACount) {
                // counted as one
            }
            Counter.builder(DROPPED)
                    .description("idemkit events dropped before delivery")
                    .tags(tags)
                    .register(registry)
                    .increment(dropped);
            return;
        }
        String tool = event.tool() == null ? "" : event.tool();
        if (event.kind() == IdempotencyEvent.Kind.WAITED && event.detail() != null) {
            try {
                long ms = Long.parseLong(event.detail());
                Timer.builder(WAIT)
                        .description("how long idemkit calls waited for another caller's result")
                        .tags(tags)
                        .tag("tool", tool)
                        .register(registry)
                        .record(Duration.ofMillis(ms));
            } catch (NumberFormatException notMilliseconds) {
                // a core without the wait's length: counted, not timed
            }
        }
        Counter.builder(EVENTS)
                .description("idemkit events: claims, deduplications, waits, refusals, failures")
                .tags(tags)
                .tag("kind", event.kind().name().toLowerCase(Locale.ROOT))
                .tag("tool", tool)
                .tag("outcome", outcome(event.kind()))
                .register(registry)
                .increment();
    }
}
