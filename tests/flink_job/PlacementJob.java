// A bounded job of six operators for cloudsched's Flink tests.
//
// source (DataGeneratorSource, N longs) -forward-> parse -hash-> count
//   -rebalance-> enrich -forward-> filter -forward-> sink
//
// Arguments: N, then one "operator=parallelism:group" per operator; chaining
// is off so that every operator is a job vertex of its own.
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

import java.util.HashMap;
import java.util.Map;

public class PlacementJob {
    private static final String[] NAMES = {"source", "parse", "count", "enrich", "filter", "sink"};

    public static void main(String[] args) throws Exception {
        long records = Long.parseLong(args[0]);
        Map<String, Integer> parallelism = new HashMap<>();
        Map<String, String> group = new HashMap<>();
        for (String name : NAMES) {
            parallelism.put(name, 1);
            group.put(name, "default");
        }
        for (int i = 1; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            String[] pg = kv[1].split(":", 2);
            if (!parallelism.containsKey(kv[0])) {
                throw new IllegalArgumentException("unknown operator " + kv[0]);
            }
            parallelism.put(kv[0], Integer.parseInt(pg[0]));
            if (pg.length > 1) {
                group.put(kv[0], pg[1]);
            }
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.disableOperatorChaining();
        DataGeneratorSource<Long> generator =
                new DataGeneratorSource<>(i -> i, records, RateLimiterStrategy.noOp(), Types.LONG);
        SingleOutputStreamOperator<Long> source =
                env.fromSource(generator, WatermarkStrategy.noWatermarks(), "source")
                        .setParallelism(parallelism.get("source"))
                        .slotSharingGroup(group.get("source"));
        source.name("source").uid("source");
        DataStream<Long> parse = set(source.map(x -> x * 2 + 1), "parse", parallelism, group);
        DataStream<Long> count =
                set(parse.keyBy(x -> x % 1009).map(x -> x + 1), "count", parallelism, group);
        DataStream<Long> enrich = set(count.rebalance().map(x -> x ^ 5L), "enrich", parallelism, group);
        DataStream<Long> filter = set(enrich.filter(x -> x % 3 != 0), "filter", parallelism, group);
        filter.sinkTo(new DiscardingSink<>())
                .name("sink").uid("sink")
                .setParallelism(parallelism.get("sink"))
                .slotSharingGroup(group.get("sink"));
        env.execute("cloudsched-placement-job");
    }

    private static SingleOutputStreamOperator<Long> set(
            SingleOutputStreamOperator<Long> op, String name,
            Map<String, Integer> parallelism, Map<String, String> group) {
        return op.name(name).uid(name).returns(Types.LONG)
                .setParallelism(parallelism.get(name)).slotSharingGroup(group.get(name));
    }
}
