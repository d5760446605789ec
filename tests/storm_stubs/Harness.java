import cloudsched.storm.AssignmentScheduler;
import cloudsched.storm.Json;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.EvenScheduler;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.apache.storm.scheduler.WorkerSlot;

/**
 * Runs AssignmentScheduler on a cluster described in a JSON file (argument 1) and prints,
 * one per line, "assign <topology> <supervisor id> <port> <start> <end>" for every executor
 * placed, then "even <topology>" for every topology handed to EvenScheduler.
 */
public final class Harness {
    @SuppressWarnings("unchecked")
    private static Object findSupervisor(Map<String, Object> doc, String id) {
        for (Object o : (List<Object>) doc.get("supervisors")) {
            if (id.equals(((Map<String, Object>) o).get("id"))) {
                return o;
            }
        }
        throw new IllegalArgumentException("no supervisor " + id);
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        Map<String, Object> doc = (Map<String, Object>) Json.parse(
            new String(Files.readAllBytes(Paths.get(args[0])), StandardCharsets.UTF_8));
        Map<String, SupervisorDetails> sups = new LinkedHashMap<>();
        for (Object o : (List<Object>) doc.get("supervisors")) {
            Map<String, Object> s = (Map<String, Object>) o;
            List<Number> ports = new ArrayList<>();
            for (Object p : (List<Object>) s.get("ports")) {
                ports.add((Number) p);
            }
            String id = (String) s.get("id");
            sups.put(id, new SupervisorDetails(id, (String) s.get("host"), null, ports));
        }
        Set<String> black = new HashSet<>();
        for (Object o : (List<Object>) doc.getOrDefault("blacklisted", new ArrayList<>())) {
            black.add((String) o);
        }
        Cluster cluster = new Cluster(sups, black);
        for (Object o : (List<Object>) doc.getOrDefault("occupied", new ArrayList<>())) {
            Map<String, Object> s = (Map<String, Object>) o;
            cluster.occupy(new WorkerSlot((String) s.get("id"), (Number) s.get("port")), "other");
        }
        Map<String, TopologyDetails> tops = new LinkedHashMap<>();
        for (Object o : (List<Object>) doc.get("topologies")) {
            Map<String, Object> t = (Map<String, Object>) o;
            Map<ExecutorDetails, String> execs = new HashMap<>();
            for (Object e : (List<Object>) t.get("executors")) {
                List<Object> r = (List<Object>) e;
                execs.put(new ExecutorDetails(((Long) r.get(0)).intValue(), ((Long) r.get(1)).intValue()),
                    (String) r.get(2));
            }
            String id = (String) t.get("id");
            tops.put(id, new TopologyDetails(id, (String) t.get("name"),
                ((Long) t.get("workers")).intValue(), execs));
        }
        Map<String, Object> conf = new HashMap<>();
        if (doc.get("file") != null) {
            conf.put(AssignmentScheduler.FILE, doc.get("file"));
        }
        AssignmentScheduler scheduler = new AssignmentScheduler();
        scheduler.prepare(conf, null);
        long rounds = (Long) doc.getOrDefault("rounds", 1L);
        for (long r = 0; r < rounds; r++) {
            if (r == 1 && doc.get("kill") != null) {
                // a supervisor dies between rounds: nimbus drops it and what ran there
                String dead = (String) doc.get("kill");
                List<WorkerSlot> gone = new ArrayList<>();
                for (Object p : (List<Object>) ((Map<String, Object>) findSupervisor(doc, dead)).get("ports")) {
                    gone.add(new WorkerSlot(dead, (Number) p));
                }
                cluster.freeSlots(gone);
                sups.remove(dead);
            }
            if (r == 1 && doc.get("then_file") != null) {
                Files.write(Paths.get((String) doc.get("file")),
                    ((String) doc.get("then_file")).getBytes(StandardCharsets.UTF_8));
            }
            scheduler.schedule(new Topologies(tops), cluster);
        }
        for (Map.Entry<String, Map<ExecutorDetails, WorkerSlot>> t : cluster.assignments().entrySet()) {
            String name = tops.get(t.getKey()).getName();
            for (Map.Entry<ExecutorDetails, WorkerSlot> e : t.getValue().entrySet()) {
                System.out.println("assign " + name + " " + e.getValue().getNodeId() + " "
                    + e.getValue().getPort() + " " + e.getKey().getStartTask() + " "
                    + e.getKey().getEndTask());
            }
        }
        for (String name : EvenScheduler.GIVEN) {
            System.out.println("even " + name);
        }
    }
}
