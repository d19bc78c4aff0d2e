package dev.idemkit.spring.boot;

import org.springframework.boot.test.context.SpringBootTest;

/** {@link SpringAiWirings} on the starter's default store, in memory. */
@SpringBootTest(classes = SpringAiWirings.App.class)
class SpringAiWiringsMemoryTest extends SpringAiWirings {}
