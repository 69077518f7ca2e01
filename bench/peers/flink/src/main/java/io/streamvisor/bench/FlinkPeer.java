/*
 * FlinkPeer — the Apache Flink contender of bench/run.sh.
 *
 * The same three pipelines as the streamvisor specs that run.sh submits,
 * written with Flink's DataStream API: KafkaSource (JSON bids decoded in the
 * source's deserializer, event time = the record's "ts", per-partition
 * watermarks with zero out-of-orderness) -> operators -> KafkaSink
 * (DeliveryGuarantee AT_LEAST_ONCE or EXACTLY_ONCE), checkpoints every
 * second, in a local MiniCluster with the given parallelism.
 *
 *   W1  filter price % 3 != 0, select seq, auction, bidder,
 *       price_eur = price * 0.908, ts                 (Nexmark q1/q2 shape)
 *   W2  keyBy key, 10 s tumbling event-time windows: n = count, total = sum(price)
 *   W3  keyBy auction, 10 s sliding windows every 2 s: bids = count
 *                                                  (Nexmark q5's first stage)
 *   W4  auctions (--in) enriched with their seller's name, city, state
 *       from the persons table topic (--table), an event-time lookup
 *       join (Nexmark q3-like, the semantics of streamvisor's lookup join
 *       with "time": "event"): both inputs keyBy the person id and
 *       connected into a KeyedCoProcessFunction (Q3Join) that holds the
 *       latest person per key in ValueState (a null value deletes it) and
 *       answers each auction once the combined watermark (the minimum of
 *       both inputs') reaches its ts: at once if it already has, else
 *       from an event-time timer at ts, the waiting auctions of the key
 *       in MapState. Inner join; an auction whose person is absent or
 *       later than its ts is dropped.
 *
 * --bounded: the source stops at the end offsets taken at start; the job
 * ends when everything is written (and, for exactly-once, committed by the
 * final checkpoint). Otherwise it runs until killed.
 *
 * At the end (bounded) it writes one JSON object to --report: seconds (from
 * submit to finished), cpu_s (this process's user+sys over the same span,
 * /proc/self/stat), peak_rss_mb (VmHWM), checkpoints and checkpoint
 * p50/p99 end-to-end durations (polled from the MiniCluster's REST API
 * while the job runs). Checkpoints go to --ckpt-dir and are retained, so a
 * run killed with -9 can be started again with --restore <chk dir>.
 */
package io.streamvisor.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.serialization.AbstractDeserializationSchema;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

public final class FlinkPeer {

    /** One input record (the fields the pipelines use). */
    public static final class Bid {
        public long seq, key, auction, bidder, price, ts;
        public Bid() {}
    }

    /** JSON -> Bid, in the source (like streamvisor's decoder). */
    public static final class BidDeserializer extends AbstractDeserializationSchema<Bid> {
        private transient ObjectMapper mapper;

        @Override
        public Bid deserialize(byte[] message) throws IOException {
            if (mapper == null) {
                mapper = new ObjectMapper();
            }
            JsonNode n = mapper.readTree(message);
            Bid b = new Bid();
            b.seq = n.path("seq").asLong();
            b.key = n.path("key").asLong();
            b.auction = n.path("auction").asLong();
            b.bidder = n.path("bidder").asLong();
            b.price = n.path("price").asLong();
            b.ts = n.path("ts").asLong();
            return b;
        }
    }

    /** count and sum(price) of a window. */
    public static final class CountSum implements AggregateFunction<Bid, long[], long[]> {
        @Override public long[] createAccumulator() { return new long[2]; }
        @Override public long[] add(Bid b, long[] acc) { acc[0]++; acc[1] += b.price; return acc; }
        @Override public long[] getResult(long[] acc) { return acc; }
        @Override public long[] merge(long[] a, long[] b) { a[0] += b[0]; a[1] += b[1]; return a; }
    }

    /** Window result rows as JSON, the columns streamvisor's window emits. */
    public static final class W2Out extends ProcessWindowFunction<long[], String, Long, TimeWindow> {
        @Override
        public void process(Long key, Context ctx, Iterable<long[]> in, Collector<String> out) {
            long[] a = in.iterator().next();
            out.collect("{\"key\":" + key + ",\"window_start\":" + ctx.window().getStart()
                    + ",\"window_end\":" + ctx.window().getEnd() + ",\"n\":" + a[0]
                    + ",\"total\":" + a[1] + "}");
        }
    }

    public static final class W3Out extends ProcessWindowFunction<long[], String, Long, TimeWindow> {
        @Override
        public void process(Long auction, Context ctx, Iterable<long[]> in, Collector<String> out) {
            long[] a = in.iterator().next();
            out.collect("{\"auction\":" + auction + ",\"window_start\":" + ctx.window().getStart()
                    + ",\"window_end\":" + ctx.window().getEnd() + ",\"bids\":" + a[0] + "}");
        }
    }

    /** W4's left input: one auction (the fields the output keeps). */
    public static final class Auction {
        public long id, seller, category, initialBid, ts;
        public Auction() {}
    }

    /** W4's table: one person row; deleted = a null message value. */
    public static final class Person {
        public long pid, pts;
        public String name, city, state;
        public boolean deleted;
        public Person() {}
    }

    public static final class AuctionDeserializer extends AbstractDeserializationSchema<Auction> {
        private transient ObjectMapper mapper;

        @Override
        public Auction deserialize(byte[] message) throws IOException {
            if (mapper == null) {
                mapper = new ObjectMapper();
            }
            JsonNode n = mapper.readTree(message);
            Auction x = new Auction();
            x.id = n.path("id").asLong();
            x.seller = n.path("seller").asLong();
            x.category = n.path("category").asLong();
            x.initialBid = n.path("initial_bid").asLong();
            x.ts = n.path("ts").asLong();
            return x;
        }
    }

    /** Person rows; a tombstone (null value) becomes a deleted Person keyed by the message key. */
    public static final class PersonDeserializer
            implements org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema<Person> {
        private transient ObjectMapper mapper;

        @Override
        public void deserialize(org.apache.kafka.clients.consumer.ConsumerRecord<byte[], byte[]> r,
                Collector<Person> out) throws IOException {
            if (mapper == null) {
                mapper = new ObjectMapper();
            }
            Person p = new Person();
            if (r.value() == null) {
                if (r.key() == null) {
                    return;
                }
                p.pid = Long.parseLong(new String(r.key(), StandardCharsets.UTF_8));
                p.pts = r.timestamp();
                p.deleted = true;
            } else {
                JsonNode n = mapper.readTree(r.value());
                p.pid = n.path("pid").asLong();
                p.pts = n.path("pts").asLong();
                p.name = n.path("name").asText();
                p.city = n.path("city").asText();
                p.state = n.path("state").asText();
            }
            out.collect(p);
        }

        @Override
        public TypeInformation<Person> getProducedType() {
            return TypeInformation.of(Person.class);
        }
    }

    private static String jsonString(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\');
            }
            b.append(c);
        }
        return b.append('"').toString();
    }

    /** W4: the event-time lookup join of an auction with its seller (see the header). */
    public static final class Q3Join extends KeyedCoProcessFunction<Long, Auction, Person, String> {
        private transient ValueState<Person> person;
        private transient MapState<Long, List<Auction>> waiting;

        @Override
        public void open(org.apache.flink.api.common.functions.OpenContext ctx) {
            person = getRuntimeContext().getState(new ValueStateDescriptor<>("person", Person.class));
            waiting = getRuntimeContext().getMapState(new MapStateDescriptor<>("waiting", Types.LONG,
                    Types.LIST(TypeInformation.of(Auction.class))));
        }

        private void answer(Auction a, Collector<String> out) throws Exception {
            Person p = person.value();
            if (p == null || p.pts > a.ts) {
                return;
            }
            out.collect("{\"id\":" + a.id + ",\"seller\":" + a.seller + ",\"category\":" + a.category
                    + ",\"initial_bid\":" + a.initialBid + ",\"ts\":" + a.ts + ",\"name\":" + jsonString(p.name)
                    + ",\"city\":" + jsonString(p.city) + ",\"state\":" + jsonString(p.state) + "}");
        }

        @Override
        public void processElement1(Auction a, Context ctx, Collector<String> out) throws Exception {
            if (ctx.timerService().currentWatermark() >= a.ts) {
                answer(a, out);
                return;
            }
            List<Auction> l = waiting.get(a.ts);
            if (l == null) {
                l = new ArrayList<>();
                ctx.timerService().registerEventTimeTimer(a.ts);
            }
            l.add(a);
            waiting.put(a.ts, l);
        }

        @Override
        public void processElement2(Person p, Context ctx, Collector<String> out) throws Exception {
            if (p.deleted) {
                person.clear();
            } else {
                person.update(p);
            }
        }

        @Override
        public void onTimer(long ts, OnTimerContext ctx, Collector<String> out) throws Exception {
            List<Auction> l = waiting.get(ts);
            if (l == null) {
                return;
            }
            for (Auction a : l) {
                answer(a, out);
            }
            waiting.remove(ts);
        }
    }

    private static Map<String, String> parseArgs(String[] args) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument '" + a + "'");
            }
            if (a.equals("--bounded")) {
                m.put("bounded", "true");
            } else {
                m.put(a.substring(2), args[++i]);
            }
        }
        return m;
    }

    private static long[] procCpuTicks() throws IOException {
        String s = Files.readString(Path.of("/proc/self/stat"));
        String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
        // fields after the command: state(3) ... utime(14) stime(15)
        return new long[] {Long.parseLong(f[11]), Long.parseLong(f[12])};
    }

    private static double cpuSeconds() throws IOException {
        long[] t = procCpuTicks();
        return (t[0] + t[1]) / 100.0; // USER_HZ on Linux
    }

    private static double peakRssMb() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmHWM:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
            }
        }
        return -1;
    }

    private static DataStream<String> bidsPipeline(DataStream<Bid> bids, String workload) {
        DataStream<String> result;
        switch (workload) {
            case "W1":
                result = bids.filter(b -> b.price % 3 != 0)
                        .map(b -> "{\"seq\":" + b.seq + ",\"auction\":" + b.auction + ",\"bidder\":"
                                + b.bidder + ",\"price_eur\":" + (b.price * 0.908) + ",\"ts\":" + b.ts + "}")
                        .name("W1 filter+select");
                break;
            case "W2":
                result = bids.keyBy(b -> b.key)
                        .window(TumblingEventTimeWindows.of(Duration.ofSeconds(10)))
                        .aggregate(new CountSum(), new W2Out())
                        .name("W2 tumbling count+sum");
                break;
            case "W3":
                result = bids.keyBy(b -> b.auction)
                        .window(SlidingEventTimeWindows.of(Duration.ofSeconds(10), Duration.ofSeconds(2)))
                        .aggregate(new CountSum(), new W3Out())
                        .name("W3 sliding count per auction");
                break;
            default:
                throw new IllegalArgumentException("unknown workload " + workload);
        }
        return result;
    }

    /** W4's job graph: auctions and persons, each a KafkaSource, keyed by person id and joined. */
    private static DataStream<String> q3(StreamExecutionEnvironment env, String bootstrap, String in,
            String table, String name, boolean bounded) {
        var as = KafkaSource.<Auction>builder()
                .setBootstrapServers(bootstrap)
                .setTopics(in)
                .setGroupId(name)
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setValueOnlyDeserializer(new AuctionDeserializer())
                .setProperty("isolation.level", "read_committed")
                .setProperty("partition.discovery.interval.ms", "-1");
        var ps = KafkaSource.<Person>builder()
                .setBootstrapServers(bootstrap)
                .setTopics(table)
                .setGroupId(name + "-table")
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setDeserializer(new PersonDeserializer())
                .setProperty("isolation.level", "read_committed")
                .setProperty("partition.discovery.interval.ms", "-1");
        if (bounded) {
            as.setBounded(OffsetsInitializer.latest());
            ps.setBounded(OffsetsInitializer.latest());
        }
        DataStream<Auction> auctions = env.fromSource(as.build(),
                WatermarkStrategy.<Auction>forBoundedOutOfOrderness(Duration.ZERO)
                        .withTimestampAssigner((x, t) -> x.ts), "kafka:" + in);
        DataStream<Person> persons = env.fromSource(ps.build(),
                WatermarkStrategy.<Person>forBoundedOutOfOrderness(Duration.ZERO)
                        .withTimestampAssigner((x, t) -> x.pts), "kafka:" + table);
        return auctions.keyBy(x -> x.seller)
                .connect(persons.keyBy(x -> x.pid))
                .process(new Q3Join())
                .name("W4 lookup join auctions-persons");
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = parseArgs(argv);
        String bootstrap = a.getOrDefault("bootstrap", "127.0.0.1:19492");
        String in = a.get("in"), out = a.get("out");
        String workload = a.getOrDefault("workload", "W1");
        boolean exactlyOnce = a.getOrDefault("delivery", "at_least_once").equals("exactly_once");
        boolean bounded = a.containsKey("bounded");
        int parallelism = Integer.parseInt(a.getOrDefault("parallelism", "2"));
        int restPort = Integer.parseInt(a.getOrDefault("rest-port", "19481"));
        String ckptDir = a.get("ckpt-dir");
        String report = a.get("report");
        String name = a.getOrDefault("name", "flink-" + workload);

        Configuration conf = new Configuration();
        conf.setString("rest.port", Integer.toString(restPort));
        conf.setString("rest.address", "127.0.0.1");
        conf.setString("rest.bind-address", "127.0.0.1");
        conf.setString("execution.checkpointing.interval", "1 s");
        conf.setString("execution.checkpointing.mode", exactlyOnce ? "EXACTLY_ONCE" : "AT_LEAST_ONCE");
        conf.setString("execution.checkpointing.num-retained", "1");
        if (ckptDir != null) {
            conf.setString("execution.checkpointing.dir", Path.of(ckptDir).toUri().toString());
            conf.setString("execution.checkpointing.externalized-checkpoint-retention",
                    "RETAIN_ON_CANCELLATION");
        }
        if (a.containsKey("restore")) {
            conf.setString("execution.state-recovery.path", Path.of(a.get("restore")).toUri().toString());
        }
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(parallelism, conf);

        var sb = KafkaSource.<Bid>builder()
                .setBootstrapServers(bootstrap)
                .setTopics(in)
                .setGroupId(name)
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setValueOnlyDeserializer(new BidDeserializer())
                .setProperty("isolation.level", "read_committed")
                .setProperty("partition.discovery.interval.ms", "-1");
        if (bounded) {
            sb.setBounded(OffsetsInitializer.latest());
        }
        WatermarkStrategy<Bid> wms = WatermarkStrategy.<Bid>forBoundedOutOfOrderness(Duration.ZERO)
                .withTimestampAssigner((b, t) -> b.ts);
        DataStream<String> result;
        if (workload.equals("W4")) {
            result = q3(env, bootstrap, in, a.get("table"), name, bounded);
        } else {
            result = bidsPipeline(env.fromSource(sb.build(), wms, "kafka:" + in), workload);
        }

        Properties producerProps = new Properties();
        producerProps.setProperty("transaction.timeout.ms", "60000");
        producerProps.setProperty("linger.ms", "5");
        producerProps.setProperty("batch.size", "1048576");
        KafkaSink<String> sink = KafkaSink.<String>builder()
                .setBootstrapServers(bootstrap)
                .setKafkaProducerConfig(producerProps)
                .setRecordSerializer(KafkaRecordSerializationSchema.builder()
                        .setTopic(out)
                        .setValueSerializationSchema(new SimpleStringSchema())
                        .build())
                .setDeliveryGuarantee(exactlyOnce ? DeliveryGuarantee.EXACTLY_ONCE
                        : DeliveryGuarantee.AT_LEAST_ONCE)
                .setTransactionalIdPrefix(name)
                .build();
        result.sinkTo(sink).name("kafka:" + out);

        double cpu0 = cpuSeconds();
        long t0 = System.nanoTime();
        JobClient job = env.executeAsync(name);
        String jobId = job.getJobID().toHexString();
        System.err.println("flink-peer: job " + jobId + " submitted");

        HttpClient http = HttpClient.newHttpClient();
        ObjectMapper mapper = new ObjectMapper();
        JsonNode lastStats = null;
        boolean announced = false;
        var done = job.getJobExecutionResult();
        while (!done.isDone()) {
            try {
                if (!announced && job.getJobStatus().get().toString().equals("RUNNING")) {
                    System.err.println("flink-peer: RUNNING");
                    announced = true;
                }
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + restPort + "/jobs/" + jobId + "/checkpoints"))
                        .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    lastStats = mapper.readTree(r.body());
                }
            } catch (Exception e) {
                // the cluster goes away when the job ends
            }
            Thread.sleep(500);
        }
        done.get();
        double seconds = (System.nanoTime() - t0) / 1e9;
        double cpu = cpuSeconds() - cpu0;

        StringBuilder j = new StringBuilder();
        j.append("{\"seconds\":").append(String.format("%.3f", seconds))
                .append(",\"cpu_s\":").append(String.format("%.3f", cpu))
                .append(",\"peak_rss_mb\":").append(String.format("%.1f", peakRssMb()));
        if (lastStats != null) {
            JsonNode c = lastStats.path("counts");
            JsonNode d = lastStats.path("summary").path("end_to_end_duration");
            j.append(",\"checkpoints\":").append(c.path("completed").asLong());
            if (!d.isMissingNode() && c.path("completed").asLong() > 0) {
                j.append(",\"checkpoint_p50_ms\":").append(d.path("p50").asDouble())
                        .append(",\"checkpoint_p99_ms\":").append(d.path("p99").asDouble());
            }
        }
        j.append("}");
        if (report != null) {
            Files.writeString(Path.of(report), j + "\n", StandardCharsets.UTF_8);
        }
        System.out.println(j);
        System.exit(0);
    }
}
