/**
 * The store SPI: {@link dev.idemkit.spi.StoreOperations} and its value types, for stores written in
 * Java over the application's own clients. The native executor drives them; see {@link
 * dev.idemkit.IdempotencyStore#of(StoreOperations)}.
 */
package dev.idemkit.spi;
