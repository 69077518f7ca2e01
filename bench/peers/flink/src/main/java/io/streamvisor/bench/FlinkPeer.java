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
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.serialization.AbstractDeserializationSchema;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
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
        DataStream<Bid> bids = env.fromSource(sb.build(), wms, "kafka:" + in);

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
