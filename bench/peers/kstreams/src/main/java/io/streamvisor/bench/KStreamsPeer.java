/*
 * KStreamsPeer — the Kafka Streams contender of bench/run.sh.
 *
 * The same three pipelines as the streamvisor specs and the Flink peer, as
 * one Kafka Streams application (2 stream threads, processing.guarantee
 * at_least_once or exactly_once_v2, commit.interval.ms 1000 to match the
 * other contenders' checkpoint a second), reading the JSON bids with
 * Jackson like the Flink peer:
 *
 *   W1  filter price % 3 != 0, select seq, auction, bidder,
 *       price_eur = price * 0.908, ts
 *   W2  by key, 10 s tumbling event-time windows: n = count, total = sum(price)
 *   W3  by auction, 10 s sliding windows every 2 s: bids = count
 *   W4  auctions (--in, keyed by seller) joined with the persons table
 *       (--table, compacted, keyed by pid; the two co-partitioned): a
 *       KStream-KTable inner join, the persons topic as a KTable with
 *       a JSON serde (a lookup deserializes the stored person, as a
 *       JsonSerde does), topology optimization "all" so the table's store
 *       is restored from the source topic instead of a changelog. The
 *       auctions are decoded in processValues (no key change, so no
 *       repartition). Which person an auction sees: the one current when
 *       it is processed; Kafka Streams picks the record with the smallest
 *       timestamp among a task's partitions (and waits for a partition
 *       with known lag and no buffered data), and the persons were
 *       produced before the auctions, so the table is read first.
 *
 * Kafka Streams has no bounded mode and no watermark, so two things are
 * done by hand, in the processor API (docs: bench/README.md "kstreams"):
 *
 * End of input. The end offsets (read_committed) of every input partition
 * are read with an admin client before the application starts. The source
 * processor notes each partition whose last record (offset end - 1) it has
 * processed. W1 is done when every non-empty partition is; the peer then
 * closes the application, which commits (at-least-once: flush + offset
 * commit; exactly-once: the open transactions commit).
 *
 * Windows. The DSL's windowed aggregation fires on stream time, the
 * largest timestamp a task has seen; after a repartition that mixes 8
 * input partitions, grace 0 would drop the records of every partition
 * that lags the fastest one, and suppress(untilWindowCloses) never emits
 * the windows still open when the input ends. So W2/W3 rekey in the
 * source processor and repartition (an internal topic with the input's
 * partition count, as groupBy would) carrying the source partition in the
 * value; the window processor keeps, per task, the largest timestamp seen
 * from each source partition and fires a window when its end - 1 is at or
 * below the smallest of them — the per-partition watermark with zero
 * out-of-orderness that Flink and streamvisor use. Window state is a
 * persistent (RocksDB, changelogged, cached) key-value store keyed by
 * (window start, key), like the DSL's. End of input for windows: when a
 * source task reaches the end of its partition it sends an end-of-input
 * marker to every repartition partition (a StreamPartitioner that
 * multicasts it, after everything that task forwarded, in order); a
 * window task that has the markers of every non-empty source partition
 * emits all its open windows — what a bounded Flink source's final
 * watermark does. The run is done when every repartition partition has
 * flushed.
 *
 * At the end it writes one JSON object to --report: seconds (from start()
 * to the end of close()), cpu_s (user+sys of this process over the same
 * span, /proc/self/stat), peak_rss_mb (VmHWM), commits (the stream threads'
 * commit-total), records_read (records the source processor saw, more
 * than the input if a task was reprocessed).
 */
package io.streamvisor.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.processor.StreamPartitioner;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

public final class KStreamsPeer {

    static final String STORE = "windows";

    /* Shared by the stream threads of this process: input end offsets,
     * the source partitions done, the repartition partitions flushed. */
    static Map<Integer, Long> endOffsets;
    static Set<Integer> nonEmpty;
    static final Set<Integer> sourcesDone = ConcurrentHashMap.newKeySet();
    static final Set<Integer> windowsFlushed = ConcurrentHashMap.newKeySet();
    static final LongAdder recordsRead = new LongAdder();
    static final CountDownLatch finished = new CountDownLatch(1);
    static int partitions;
    static String workload;

    /* Repartitioned value: [source partition, ts, price, marker (0/1)]. */
    static byte[] pack(long src, long ts, long price, long marker) {
        return ByteBuffer.allocate(32).putLong(src).putLong(ts).putLong(price).putLong(marker).array();
    }

    /** Source: decode, note the end of each partition, W1 filter+select or rekey. */
    static final class SourceProc implements Processor<byte[], byte[], Object, Object> {
        private ProcessorContext<Object, Object> ctx;
        private final ObjectMapper mapper = new ObjectMapper();

        @Override
        public void init(ProcessorContext<Object, Object> context) {
            ctx = context;
        }

        @Override
        public void process(Record<byte[], byte[]> r) {
            RecordMetadata md = ctx.recordMetadata().orElseThrow();
            int p = md.partition();
            recordsRead.increment();
            JsonNode n;
            try {
                n = mapper.readTree(r.value());
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
            long ts = n.path("ts").asLong();
            long price = n.path("price").asLong();
            if (workload.equals("W1")) {
                if (price % 3 != 0) {
                    String v = "{\"seq\":" + n.path("seq").asLong() + ",\"auction\":" + n.path("auction").asLong()
                            + ",\"bidder\":" + n.path("bidder").asLong() + ",\"price_eur\":" + (price * 0.908)
                            + ",\"ts\":" + ts + "}";
                    ctx.forward(new Record<Object, Object>(r.key(), v, ts));
                }
            } else {
                long k = workload.equals("W2") ? n.path("key").asLong() : n.path("auction").asLong();
                ctx.forward(new Record<Object, Object>(k, pack(p, ts, price, 0), ts));
            }
            if (md.offset() + 1 >= endOffsets.getOrDefault(p, 0L) && !sourcesDone.contains(p)) {
                if (!workload.equals("W1")) {
                    ctx.forward(new Record<Object, Object>(Long.MIN_VALUE, pack(p, ts, 0, 1), ts));
                }
                sourcesDone.add(p);
                if (workload.equals("W1") && sourcesDone.containsAll(nonEmpty)) {
                    finished.countDown();
                }
            }
        }
    }

    /** Markers to every repartition partition, data by the default partitioner's hash. */
    static final class ByKey implements StreamPartitioner<Long, byte[]> {
        private static int hash(String topic, Long key, int numPartitions) {
            return Utils.toPositive(Utils.murmur2(Serdes.Long().serializer().serialize(topic, key))) % numPartitions;
        }

        @Override
        public Optional<Set<Integer>> partitions(String topic, Long key, byte[] value, int numPartitions) {
            if (ByteBuffer.wrap(value).getLong(24) == 1) {
                Set<Integer> all = new HashSet<>();
                for (int i = 0; i < numPartitions; i++) {
                    all.add(i);
                }
                return Optional.of(all);
            }
            return Optional.of(Set.of(hash(topic, key, numPartitions)));
        }
    }

    /** Tumbling (slide == size) or sliding event-time windows: count, sum(price). */
    static final class WindowProc implements Processor<Long, byte[], String, String> {
        private final long size, slide;
        private ProcessorContext<String, String> ctx;
        private KeyValueStore<Bytes, byte[]> store;
        private final Map<Integer, Long> maxTs = new HashMap<>();
        private final Set<Integer> markers = new HashSet<>();
        private final TreeSet<Long> openStarts = new TreeSet<>();

        WindowProc(long size, long slide) {
            this.size = size;
            this.slide = slide;
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            ctx = context;
            store = context.getStateStore(STORE);
            try (KeyValueIterator<Bytes, byte[]> it = store.all()) {
                while (it.hasNext()) {
                    openStarts.add(ByteBuffer.wrap(it.next().key.get()).getLong(0));
                }
            }
        }

        private static Bytes skey(long start, long key) {
            return Bytes.wrap(ByteBuffer.allocate(16).putLong(start ^ Long.MIN_VALUE).putLong(key ^ Long.MIN_VALUE).array());
        }

        @Override
        public void process(Record<Long, byte[]> r) {
            ByteBuffer v = ByteBuffer.wrap(r.value());
            int src = (int) v.getLong(0);
            long ts = v.getLong(8), price = v.getLong(16);
            if (v.getLong(24) == 1) {
                markers.add(src);
                if (markers.containsAll(nonEmpty)) {
                    fire(Long.MAX_VALUE);
                    windowsFlushed.add(ctx.recordMetadata().orElseThrow().partition());
                    if (windowsFlushed.size() == partitions) {
                        finished.countDown();
                    }
                }
                return;
            }
            long wm = watermark();
            long last = ts - Math.floorMod(ts, slide);
            for (long start = last; start > ts - size; start -= slide) {
                if (start + size - 1 <= wm) {
                    continue; // late: its window already fired
                }
                Bytes k = skey(start, r.key());
                byte[] cur = store.get(k);
                long cnt = 1, sum = price;
                if (cur != null) {
                    ByteBuffer c = ByteBuffer.wrap(cur);
                    cnt += c.getLong(0);
                    sum += c.getLong(8);
                }
                store.put(k, ByteBuffer.allocate(16).putLong(cnt).putLong(sum).array());
                openStarts.add(start);
            }
            Long prev = maxTs.get(src);
            if (prev == null || ts > prev) {
                maxTs.put(src, ts);
                long nwm = watermark();
                if (nwm > wm) {
                    fire(nwm);
                }
            }
        }

        private long watermark() {
            long wm = Long.MAX_VALUE;
            for (int p : nonEmpty) {
                Long t = maxTs.get(p);
                if (t == null) {
                    return Long.MIN_VALUE;
                }
                wm = Math.min(wm, t);
            }
            return wm;
        }

        /** Emit and delete every window whose end - 1 <= wm, oldest first. */
        private void fire(long wm) {
            while (!openStarts.isEmpty()) {
                long start = openStarts.first();
                if (wm != Long.MAX_VALUE && start + size - 1 > wm) {
                    break;
                }
                openStarts.pollFirst();
                List<Bytes> done = new ArrayList<>();
                try (KeyValueIterator<Bytes, byte[]> it = store.range(skey(start, Long.MIN_VALUE),
                        skey(start, Long.MAX_VALUE))) {
                    while (it.hasNext()) {
                        KeyValue<Bytes, byte[]> e = it.next();
                        ByteBuffer k = ByteBuffer.wrap(e.key.get());
                        ByteBuffer a = ByteBuffer.wrap(e.value);
                        long key = k.getLong(8) ^ Long.MIN_VALUE;
                        String out = workload.equals("W2")
                                ? "{\"key\":" + key + ",\"window_start\":" + start + ",\"window_end\":"
                                        + (start + size) + ",\"n\":" + a.getLong(0) + ",\"total\":" + a.getLong(8) + "}"
                                : "{\"auction\":" + key + ",\"window_start\":" + start + ",\"window_end\":"
                                        + (start + size) + ",\"bids\":" + a.getLong(0) + "}";
                        ctx.forward(new Record<>(Long.toString(key), out, start + size - 1));
                        done.add(e.key);
                    }
                }
                for (Bytes k : done) {
                    store.delete(k);
                }
            }
        }
    }

    /** W4: one auction (the fields the output keeps). */
    static final class Auction {
        long id, seller, category, initialBid, ts;
    }

    /** W4: one person as stored in the KTable. */
    static final class Person {
        long pid, pts;
        String name, city, state;
    }

    static final ObjectMapper MAPPER = new ObjectMapper();

    /** The persons' value serde: JSON both ways (what a JsonSerde does). */
    static final Serde<Person> PERSON_SERDE = Serdes.serdeFrom(
            (Serializer<Person>) (topic, p) -> {
                if (p == null) {
                    return null;
                }
                var o = MAPPER.createObjectNode();
                o.put("pid", p.pid).put("name", p.name).put("city", p.city).put("state", p.state)
                        .put("pts", p.pts);
                return o.toString().getBytes(StandardCharsets.UTF_8);
            },
            (Deserializer<Person>) (topic, b) -> {
                if (b == null) {
                    return null;
                }
                try {
                    JsonNode n = MAPPER.readTree(b);
                    Person p = new Person();
                    p.pid = n.path("pid").asLong();
                    p.pts = n.path("pts").asLong();
                    p.name = n.path("name").asText();
                    p.city = n.path("city").asText();
                    p.state = n.path("state").asText();
                    return p;
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            });

    static String jsonString(String v) {
        StringBuilder b = new StringBuilder(v.length() + 2).append('"');
        for (int i = 0; i < v.length(); i++) {
            char c = v.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\');
            }
            b.append(c);
        }
        return b.append('"').toString();
    }

    /** W4 source: decode the auction, note the end of each partition (after forwarding). */
    static final class AuctionProc implements FixedKeyProcessor<String, byte[], Auction> {
        private FixedKeyProcessorContext<String, Auction> ctx;
        private final ObjectMapper mapper = new ObjectMapper();

        @Override
        public void init(FixedKeyProcessorContext<String, Auction> context) {
            ctx = context;
        }

        @Override
        public void process(FixedKeyRecord<String, byte[]> r) {
            RecordMetadata md = ctx.recordMetadata().orElseThrow();
            int p = md.partition();
            recordsRead.increment();
            JsonNode n;
            try {
                n = mapper.readTree(r.value());
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
            Auction a = new Auction();
            a.id = n.path("id").asLong();
            a.seller = n.path("seller").asLong();
            a.category = n.path("category").asLong();
            a.initialBid = n.path("initial_bid").asLong();
            a.ts = n.path("ts").asLong();
            ctx.forward(r.withValue(a));
            if (md.offset() + 1 >= endOffsets.getOrDefault(p, 0L) && !sourcesDone.contains(p)) {
                sourcesDone.add(p);
                if (sourcesDone.containsAll(nonEmpty)) {
                    finished.countDown();
                }
            }
        }
    }

    private static Map<String, String> parseArgs(String[] args) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument '" + a + "'");
            }
            m.put(a.substring(2), args[++i]);
        }
        return m;
    }

    private static double cpuSeconds() throws IOException {
        String s = Files.readString(Path.of("/proc/self/stat"));
        String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
        return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / 100.0; // USER_HZ
    }

    private static double peakRssMb() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmHWM:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
            }
        }
        return -1;
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = parseArgs(argv);
        String bootstrap = a.getOrDefault("bootstrap", "127.0.0.1:19492");
        String in = a.get("in"), out = a.get("out");
        workload = a.getOrDefault("workload", "W1");
        boolean exactlyOnce = a.getOrDefault("delivery", "at_least_once").equals("exactly_once");
        String name = a.getOrDefault("name", "kstreams-" + workload);
        String stateDir = a.getOrDefault("state-dir", "/tmp/kstreams-" + name);
        String report = a.get("report");
        int threads = Integer.parseInt(a.getOrDefault("threads", "2"));

        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            List<Integer> ps = admin.describeTopics(List.of(in)).allTopicNames().get().get(in).partitions()
                    .stream().map(p -> p.partition()).collect(Collectors.toList());
            Map<TopicPartition, OffsetSpec> q = new HashMap<>();
            for (int p : ps) {
                q.put(new TopicPartition(in, p), OffsetSpec.latest());
            }
            var res = admin.listOffsets(q, new ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).all().get();
            endOffsets = new HashMap<>();
            res.forEach((tp, info) -> endOffsets.put(tp.partition(), info.offset()));
            partitions = ps.size();
        }
        nonEmpty = endOffsets.entrySet().stream().filter(e -> e.getValue() > 0).map(Map.Entry::getKey)
                .collect(Collectors.toSet());

        StreamsBuilder b = new StreamsBuilder();
        KStream<Object, Object> s = workload.equals("W4") ? null
                : b.stream(in, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray())).process(SourceProc::new);
        if (workload.equals("W4")) {
            KTable<String, Person> persons = b.table(a.get("table"), Consumed.with(Serdes.String(), PERSON_SERDE));
            b.stream(in, Consumed.with(Serdes.String(), Serdes.ByteArray()))
                    .processValues(AuctionProc::new)
                    .join(persons, (x, q) -> q.pts > x.ts ? null
                            : "{\"id\":" + x.id + ",\"seller\":" + x.seller + ",\"category\":" + x.category
                                    + ",\"initial_bid\":" + x.initialBid + ",\"ts\":" + x.ts + ",\"name\":"
                                    + jsonString(q.name) + ",\"city\":" + jsonString(q.city) + ",\"state\":"
                                    + jsonString(q.state) + "}")
                    .filter((k, v) -> v != null)
                    .to(out, Produced.with(Serdes.String(), Serdes.String()));
        } else if (workload.equals("W1")) {
            s.map((k, v) -> KeyValue.pair((byte[]) k, (String) v))
                    .to(out, Produced.with(Serdes.ByteArray(), Serdes.String()));
        } else {
            long size = 10000, slide = workload.equals("W2") ? 10000 : 2000;
            StoreBuilder<KeyValueStore<Bytes, byte[]>> sb = Stores.keyValueStoreBuilder(
                    Stores.persistentKeyValueStore(STORE), Serdes.Bytes(), Serdes.ByteArray()).withCachingEnabled();
            b.addStateStore(sb);
            s.map((k, v) -> KeyValue.pair((Long) k, (byte[]) v))
                    .repartition(Repartitioned.<Long, byte[]>with(Serdes.Long(), Serdes.ByteArray())
                            .withName("by-key").withNumberOfPartitions(partitions)
                            .withStreamPartitioner(new ByKey()))
                    .process(() -> new WindowProc(size, slide), STORE)
                    .to(out, Produced.with(Serdes.String(), Serdes.String()));
        }

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, name);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, threads);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
                exactlyOnce ? StreamsConfig.EXACTLY_ONCE_V2 : StreamsConfig.AT_LEAST_ONCE);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 1000);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.ISOLATION_LEVEL_CONFIG), "read_committed");
        p.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), 5);
        p.put(StreamsConfig.producerPrefix(ProducerConfig.BATCH_SIZE_CONFIG), 1048576);
        p.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 60000);

        if (workload.equals("W4")) {
            p.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, StreamsConfig.OPTIMIZE);
        }
        KafkaStreams ks = new KafkaStreams(b.build(p), p);
        ks.setUncaughtExceptionHandler(e -> {
            e.printStackTrace();
            System.exit(2);
            return null;
        });
        double cpu0 = cpuSeconds();
        long t0 = System.nanoTime();
        ks.start();
        System.err.println("kstreams-peer: started, end offsets " + endOffsets);
        if (nonEmpty.isEmpty()) {
            finished.countDown();
        }
        if (!finished.await(30, TimeUnit.MINUTES)) {
            throw new IllegalStateException("not finished after 30 min");
        }
        double commits = 0;
        for (Map.Entry<MetricName, ? extends Metric> m : ks.metrics().entrySet()) {
            if (m.getKey().name().equals("commit-total") && m.getKey().group().equals("stream-thread-metrics")) {
                commits += ((Number) m.getValue().metricValue()).doubleValue();
            }
        }
        ks.close(Duration.ofMinutes(5));
        double seconds = (System.nanoTime() - t0) / 1e9;
        double cpu = cpuSeconds() - cpu0;
        String j = String.format(
                "{\"seconds\":%.3f,\"cpu_s\":%.3f,\"peak_rss_mb\":%.1f,\"commits\":%d,\"records_read\":%d}",
                seconds, cpu, peakRssMb(), (long) commits, recordsRead.sum());
        if (report != null) {
            Files.writeString(Path.of(report), j + "\n", StandardCharsets.UTF_8);
        }
        System.out.println(j);
        System.exit(ks.state() == KafkaStreams.State.NOT_RUNNING ? 0 : 1);
    }
}
