package dev.idemkit;

import com.fasterxml.jackson.databind.DeserializationConfig;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.deser.AbstractDeserializer;
import com.fasterxml.jackson.databind.deser.BeanDeserializerBase;
import com.fasterxml.jackson.databind.deser.DefaultDeserializationContext;
import com.fasterxml.jackson.databind.deser.impl.UnsupportedTypeDeserializer;
import com.fasterxml.jackson.databind.introspect.AnnotatedMember;
import com.fasterxml.jackson.databind.introspect.BeanPropertyDefinition;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.ser.impl.UnknownSerializer;
import com.fasterxml.jackson.databind.ser.impl.UnsupportedTypeSerializer;
import com.fasterxml.jackson.databind.ser.std.BeanSerializerBase;
import com.fasterxml.jackson.datatype.jdk8.Jdk8Module;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import java.util.HashSet;
import java.util.Set;

/**
 * Results cross the store as JSON (SPEC v1.1 rule 6): the mapper the builders use by default, and
 * the check, when a tool or action is registered, that its declared result type can be written as
 * JSON and read back.
 */
final class ResultTypes {
    private ResultTypes() {}

    /**
     * The default mapper: java.time and JDK 8 types (Optional, OptionalInt, ...) registered, dates
     * as ISO-8601 text with their zone, unknown members ignored when reading.
     */
    static ObjectMapper defaultMapper() {
        return JsonMapper.builder()
                .addModule(new Jdk8Module())
                .addModule(new JavaTimeModule())
                .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
                .disable(DeserializationFeature.ADJUST_DATES_TO_CONTEXT_TIME_ZONE)
                .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
                .disable(SerializationFeature.WRITE_DURATIONS_AS_TIMESTAMPS)
                .enable(SerializationFeature.WRITE_DATES_WITH_ZONE_ID)
                .build();
    }

    /**
     * Refuses a declared result type that {@code mapper} cannot write as JSON or read back: a type
     * Jackson does not support without a module, a bean with no properties to write, a class with
     * no creator to read it back, an abstract type without type information, or a container,
     * Optional or bean member of such a type. {@code Object} and JSON trees are always fine (what
     * they hold is checked when a value is written).
     *
     * @param where "tool `name` (Class.method)" or "web-service action `name` (...)"
     * @throws IllegalArgumentException naming the tool, the declared type and the type at fault
     */
    static void requireRoundTrip(ObjectMapper mapper, JavaType type, String where) {
        Class<?> raw = type.getRawClass();
        if (raw == void.class || raw == Void.class) {
            return;
        }
        Probe probe = new Probe(mapper);
        String problem = probe.writeProblem(type);
        if (problem == null) {
            problem = probe.readProblem(type);
        }
        if (problem != null) {
            throw new IllegalArgumentException(
                    where
                            + " returns "
                            + type.toCanonical()
                            + ", which idemkit cannot"
                            + " record as JSON and read back: "
                            + problem
                            + ". Return a type Jackson can write and read (public"
                            + " getters or fields, and a no-argument constructor or a @JsonCreator), or give the builder an"
                            + " ObjectMapper that handles it");
        }
    }

    /** A result as {@code type}: itself when it is one, else converted by {@code mapper}. */
    static <T> T as(ObjectMapper mapper, Object value, Class<T> type) {
        if (value == null) {
            return null;
        }
        if (type.isInstance(value)) {
            return type.cast(value);
        }
        return mapper.convertValue(value, type);
    }

    /** Why a value of the runtime type cannot be encoded: for the message of a failed encode. */
    static String describe(Object value, String declared) {
        if (value == null) {
            return declared;
        }
        String actual = value.getClass().getName();
        return actual.equals(declared) ? declared : actual + " (declared " + declared + ")";
    }

    private static final class Probe {
        private final ObjectMapper mapper;
        private final SerializerProvider writing;
        private final DeserializationContext reading;
        private final Set<JavaType> written = new HashSet<>();
        private final Set<JavaType> read = new HashSet<>();

        Probe(ObjectMapper mapper) {
            this.mapper = mapper;
            this.writing = mapper.getSerializerProviderInstance();
            DeserializationConfig config = mapper.getDeserializationConfig();
            this.reading =
                    ((DefaultDeserializationContext) mapper.getDeserializationContext())
                            .createDummyInstance(config);
        }

        private static boolean anything(JavaType type) {
            Class<?> raw = type.getRawClass();
            return raw == Object.class
                    || JsonNode.class.isAssignableFrom(raw)
                    || type.isPrimitive();
        }

        private static String hint(JavaType type) {
            String name = type.getRawClass().getName();
            if (name.startsWith("java.time.")) {
                return " (register JavaTimeModule from jackson-datatype-jsr310 on the ObjectMapper)";
            }
            if (name.startsWith("java.util.Optional")) {
                return " (register Jdk8Module from jackson-datatype-jdk8 on the ObjectMapper)";
            }
            return "";
        }

        private static String cause(Exception e) {
            String message =
                    e instanceof com.fasterxml.jackson.core.JacksonException
                            ? ((com.fasterxml.jackson.core.JacksonException) e).getOriginalMessage()
                            : e.getMessage();
            return String.valueOf(message);
        }

        /** Why {@code type} cannot be written, or null. */
        String writeProblem(JavaType type) {
            if (anything(type) || !written.add(type)) {
                return null;
            }
            JsonSerializer<Object> serializer;
            try {
                serializer = writing.findValueSerializer(type);
            } catch (Exception e) {
                return type.toCanonical() + " cannot be written: " + cause(e);
            }
            if (serializer instanceof UnsupportedTypeSerializer) {
                return type.toCanonical() + " is not supported by this ObjectMapper" + hint(type);
            }
            if (serializer instanceof UnknownSerializer
                    && writing.isEnabled(SerializationFeature.FAIL_ON_EMPTY_BEANS)) {
                return type.toCanonical()
                        + " has no properties Jackson can write (no public getter or field, no"
                        + " @JsonProperty or @JsonValue)";
            }
            if (type.isContainerType() || type.isReferenceType()) {
                return type.getContentType() == null ? null : writeProblem(type.getContentType());
            }
            if (serializer instanceof BeanSerializerBase) {
                for (BeanPropertyDefinition property :
                        mapper.getSerializationConfig().introspect(type).findProperties()) {
                    AnnotatedMember accessor = property.getAccessor();
                    if (accessor != null && property.couldSerialize()) {
                        String problem = writeProblem(accessor.getType());
                        if (problem != null) {
                            return problem
                                    + ", in property `"
                                    + property.getName()
                                    + "` of "
                                    + type.toCanonical();
                        }
                    }
                }
            }
            return null;
        }

        /** Why {@code type} cannot be read back, or null. */
        String readProblem(JavaType type) {
            if (anything(type) || !read.add(type)) {
                return null;
            }
            JsonDeserializer<Object> deserializer;
            try {
                deserializer = reading.findRootValueDeserializer(type);
            } catch (Exception e) {
                return type.toCanonical() + " cannot be read back: " + cause(e);
            }
            if (deserializer instanceof UnsupportedTypeDeserializer) {
                return type.toCanonical() + " is not supported by this ObjectMapper" + hint(type);
            }
            if (deserializer instanceof AbstractDeserializer) {
                return type.toCanonical()
                        + " is abstract and its JSON carries no type information (@JsonTypeInfo),"
                        + " so Jackson cannot tell which class to read back";
            }
            if (deserializer instanceof BeanDeserializerBase
                    && !((BeanDeserializerBase) deserializer)
                            .getValueInstantiator()
                            .canInstantiate()) {
                return type.toCanonical()
                        + " has no creator Jackson can use to read it back (no no-argument"
                        + " constructor, no @JsonCreator)";
            }
            if (type.isMapLikeType() && type.getKeyType() != null && !anything(type.getKeyType())) {
                try {
                    reading.findKeyDeserializer(type.getKeyType(), null);
                } catch (Exception e) {
                    return "the map keys "
                            + type.getKeyType().toCanonical()
                            + " cannot be read back: "
                            + cause(e);
                }
            }
            if (type.isContainerType() || type.isReferenceType()) {
                return type.getContentType() == null ? null : readProblem(type.getContentType());
            }
            if (deserializer instanceof BeanDeserializerBase) {
                for (BeanPropertyDefinition property :
                        mapper.getDeserializationConfig().introspect(type).findProperties()) {
                    AnnotatedMember mutator = property.getMutator();
                    if (mutator != null && property.couldDeserialize()) {
                        String problem = readProblem(mutator.getType());
                        if (problem != null) {
                            return problem
                                    + ", in property `"
                                    + property.getName()
                                    + "` of "
                                    + type.toCanonical();
                        }
                    }
                }
            }
            return null;
        }
    }
}
