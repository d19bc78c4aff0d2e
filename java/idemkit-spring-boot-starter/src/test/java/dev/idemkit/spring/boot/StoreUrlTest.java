package dev.idemkit.spring.boot;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idemkit.InMemoryIdempotencyStore;
import org.junit.jupiter.api.Test;

class StoreUrlTest {
    @Test
    void memory_is_the_default_and_an_unknown_scheme_is_refused_without_the_password() {
        IdemkitProperties properties = new IdemkitProperties();
        IdemkitProperties.Store settings = properties.getStore();
        try (var store = IdemkitAutoConfiguration.open(settings)) {
            assertTrue(store instanceof InMemoryIdempotencyStore);
        }
        settings.setUrl("mysql://admin:hunter2@db/app");
        RuntimeException refused =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> new IdemkitAutoConfiguration().idempotencyStore(properties));
        assertTrue(
                refused.getMessage().startsWith("idemkit-spring-boot-starter: idemkit.store.url: "),
                refused.getMessage());
        assertTrue(refused.getMessage().contains("redis://"), refused.getMessage());
        assertFalse(refused.getMessage().contains("hunter2"), refused.getMessage());
    }
}
