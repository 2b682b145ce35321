// A Kafka Streams application of the sandbox's own, run from its source by `java` (no build
// step): counts one topic's records by value. Its group.protocol is the fourth argument
// ("streams": a KIP-1071 streams group; "classic": a classic consumer group), and the
// count makes a repartition and a changelog topic, as a stateful application's do.
// Arguments: bootstrap servers, application.id, input topic, state directory, protocol.
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.Stores;

public class StreamsCountApp {
    public static void main(String[] args) throws InterruptedException {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[3]);
        props.put("group.protocol", args[4]);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArray().getClass());
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.ByteArray().getClass());
        StreamsBuilder builder = new StreamsBuilder();
        builder.<byte[], byte[]>stream(args[2])
            .groupBy((key, value) -> value, Grouped.as("by-value"))
            .count(Materialized.as(Stores.inMemoryKeyValueStore("counts")));
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch closed = new CountDownLatch(1);
        // The sandbox stops it with SIGTERM: close() commits and leaves the group.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            closed.countDown();
        }));
        streams.setStateListener((now, before) -> System.out.println("streams state " + now));
        streams.start();
        closed.await();
    }
}
