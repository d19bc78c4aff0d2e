/**
 * For adapter authors: what every framework adapter (idemkit-langchain4j, idemkit-spring-ai, one of
 * your own) shares, so that an adapter is only its framework's translation. {@link
 * dev.idemkit.adapter.ToolAdapterBuilder} carries the builder options (store, tenant, run, mapper,
 * listeners); {@link dev.idemkit.adapter.ToolBinding} binds a tool object's {@code @Idempotent}
 * methods to {@link dev.idemkit.IdempotentOperation}s and owns them; {@link
 * dev.idemkit.adapter.ToolCall} runs one call and hands idemkit's errors to the framework's
 * translation. What a hit, a refusal or a deadline means is decided in the executor, never here.
 */
package dev.idemkit.adapter;
