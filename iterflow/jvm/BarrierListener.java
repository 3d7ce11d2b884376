package io.iterflow;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.scheduler.JobSucceeded$;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerBlockUpdated;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerJobEnd;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.scheduler.TaskInfo;
import org.apache.spark.storage.BlockUpdatedInfo;

/**
 * iterflow's barrier statistics, pushed by Spark's listener bus instead of pulled from the
 * status store: per job group, every stage attempt's task metrics, kept until the barrier
 * takes them (one py4j call, one JSON document). Also the executors alive and removed, and the
 * stored bytes of each RDD (block updates), so nothing at the barrier asks the store.
 *
 * Thread-safety: Spark calls the on* methods from the listener bus thread; the driver's Python
 * thread calls take/executors/removals/rddBytes. Everything is guarded by this object's lock.
 */
public class BarrierListener extends SparkListener {
    private static final int MAX_GROUPS = 64;

    /** One stage attempt: sums over its successful tasks and one row per task. */
    private static final class StageAcc {
        final int stageId, attempt, job;
        final double[] sums = new double[13];
        final List<String> tasks = new ArrayList<>();
        int complete, failed;
        boolean done, ok;
        long submitted = -1, completed = -1;

        StageAcc(int stageId, int attempt, int job) {
            this.stageId = stageId;
            this.attempt = attempt;
            this.job = job;
        }
    }

    private final Map<Integer, String> stageGroup = new HashMap<>();
    private final Map<Integer, Integer> stageJob = new HashMap<>();
    private final Map<String, Map<String, StageAcc>> groups = new LinkedHashMap<String, Map<String, StageAcc>>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Map<String, StageAcc>> eldest) {
            return size() > MAX_GROUPS;
        }
    };
    private final Map<String, int[]> groupJobs = new HashMap<>();  // group -> {jobs, failed}
    private final Map<String, List<Integer>> groupJobIds = new HashMap<>();
    private final BitSet ended = new BitSet();
    private final Map<String, Integer> executors = new LinkedHashMap<>();
    private final List<String> removed = new ArrayList<>();
    private final Map<Integer, Map<String, Long>> rddBlocks = new HashMap<>();

    private static String group(Properties p) {
        String g = p == null ? null : p.getProperty("spark.jobGroup.id");
        return g == null ? "" : g;
    }

    @Override
    public synchronized void onJobStart(SparkListenerJobStart e) {
        String g = group(e.properties());
        groupJobIds.computeIfAbsent(g, k -> new ArrayList<>()).add(e.jobId());
        scala.collection.Iterator<StageInfo> it = e.stageInfos().iterator();
        while (it.hasNext()) {
            StageInfo s = it.next();
            stageGroup.put(s.stageId(), g);
            stageJob.put(s.stageId(), e.jobId());
        }
    }

    @Override
    public synchronized void onJobEnd(SparkListenerJobEnd e) {
        ended.set(e.jobId());
        if (!(e.jobResult() instanceof JobSucceeded$)) {
            for (Map.Entry<String, List<Integer>> g : groupJobIds.entrySet()) {
                if (g.getValue().contains(e.jobId())) {
                    groupJobs.computeIfAbsent(g.getKey(), k -> new int[2])[1]++;
                }
            }
        }
        notifyAll();
    }

    private StageAcc acc(int stageId, int attempt) {
        String g = stageGroup.get(stageId);
        if (g == null) {
            return null;
        }
        Integer job = stageJob.get(stageId);
        return groups.computeIfAbsent(g, k -> new LinkedHashMap<>())
                .computeIfAbsent(stageId + "." + attempt, k -> new StageAcc(stageId, attempt, job == null ? -1 : job));
    }

    @Override
    public synchronized void onTaskEnd(SparkListenerTaskEnd e) {
        StageAcc s = acc(e.stageId(), e.stageAttemptId());
        if (s == null) {
            return;
        }
        TaskInfo t = e.taskInfo();
        TaskMetrics m = e.taskMetrics();
        if (!t.successful() || m == null) {
            s.failed++;
            return;
        }
        s.complete++;
        double srRecords = m.shuffleReadMetrics().recordsRead();
        double[] v = {m.executorRunTime(), m.executorCpuTime(), m.jvmGCTime(),
            m.shuffleReadMetrics().totalBytesRead(), srRecords, m.shuffleReadMetrics().remoteBytesRead(),
            m.shuffleReadMetrics().localBytesRead(), m.shuffleWriteMetrics().bytesWritten(),
            m.shuffleWriteMetrics().recordsWritten(), m.inputMetrics().recordsRead(),
            m.outputMetrics().recordsWritten(), m.memoryBytesSpilled(), m.diskBytesSpilled()};
        for (int i = 0; i < v.length; i++) {
            s.sums[i] += v[i];
        }
        // partition, run ms, cpu ns, duration ms, records read, launch ms, executor
        s.tasks.add("[" + t.partitionId() + "," + m.executorRunTime() + "," + m.executorCpuTime() + ","
                + t.duration() + "," + (long) (m.inputMetrics().recordsRead() + srRecords) + ","
                + t.launchTime() + ",\"" + t.executorId() + "\"]");
    }

    @Override
    public synchronized void onStageCompleted(SparkListenerStageCompleted e) {
        StageInfo i = e.stageInfo();
        StageAcc s = acc(i.stageId(), i.attemptNumber());
        if (s == null) {
            return;
        }
        s.done = true;
        s.ok = i.failureReason().isEmpty();
        s.submitted = i.submissionTime().isDefined() ? (Long) i.submissionTime().get() : -1;
        s.completed = i.completionTime().isDefined() ? (Long) i.completionTime().get() : -1;
    }

    @Override
    public synchronized void onExecutorAdded(SparkListenerExecutorAdded e) {
        executors.put(e.executorId(), e.executorInfo().totalCores());
    }

    @Override
    public synchronized void onExecutorRemoved(SparkListenerExecutorRemoved e) {
        executors.remove(e.executorId());
        removed.add("[\"" + esc(e.executorId()) + "\",\"" + esc(e.reason()) + "\"]");
    }

    @Override
    public synchronized void onBlockUpdated(SparkListenerBlockUpdated e) {
        BlockUpdatedInfo b = e.blockUpdatedInfo();
        if (!b.blockId().isRDD()) {
            return;
        }
        int rdd = b.blockId().asRDDId().get().rddId();
        String key = b.blockId().name() + "@" + b.blockManagerId().executorId();
        Map<String, Long> blocks = rddBlocks.computeIfAbsent(rdd, k -> new HashMap<>());
        if (b.storageLevel().isValid()) {
            blocks.put(key, b.memSize() + b.diskSize());
        } else {
            blocks.remove(key);
            if (blocks.isEmpty()) {
                rddBlocks.remove(rdd);
            }
        }
    }

    private static String esc(String s) {
        StringBuilder b = new StringBuilder();
        for (char c : (s == null ? "" : s).toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(' ');
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    /**
     * The stage attempts of job group {@code group} from jobs {@code fromJob} on, as JSON, and
     * forget them. Waits (at most {@code timeoutMs}) until every job in [fromJob, untilJob) has
     * ended: the bus delivers a job's task and stage events before its end.
     */
    public synchronized String take(String group, int fromJob, int untilJob, long timeoutMs)
            throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        boolean complete = true;
        for (int j = fromJob; j < untilJob; j++) {
            while (!ended.get(j)) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) {
                    complete = false;
                    break;
                }
                wait(left);
            }
        }
        Map<String, StageAcc> stages = groups.remove(group);
        List<Integer> jobIds = groupJobIds.remove(group);
        int[] jf = groupJobs.remove(group);
        StringBuilder out = new StringBuilder("{\"complete\":").append(complete).append(",\"jobs\":[");
        int n = 0;
        if (jobIds != null) {
            for (int j : jobIds) {
                if (j >= fromJob) {
                    out.append(n++ == 0 ? "" : ",").append(j);
                }
            }
        }
        out.append("],\"failed_jobs\":").append(jf == null ? 0 : jf[1]).append(",\"stages\":[");
        n = 0;
        if (stages != null) {
            for (StageAcc s : stages.values()) {
                if (s.job < fromJob) {
                    continue;
                }
                out.append(n++ == 0 ? "" : ",").append("{\"stageId\":").append(s.stageId)
                        .append(",\"attemptId\":").append(s.attempt).append(",\"job\":").append(s.job)
                        .append(",\"status\":\"").append(!s.done ? "ACTIVE" : s.ok ? "COMPLETE" : "FAILED")
                        .append("\",\"numCompleteTasks\":").append(s.complete)
                        .append(",\"numFailedTasks\":").append(s.failed)
                        .append(",\"submitted\":").append(s.submitted).append(",\"completed\":").append(s.completed)
                        .append(",\"sums\":[");
                for (int i = 0; i < s.sums.length; i++) {
                    out.append(i == 0 ? "" : ",").append((long) s.sums[i]);
                }
                out.append("],\"tasks\":[").append(String.join(",", s.tasks)).append("]}");
            }
        }
        return out.append("]}").toString();
    }

    /** Plan nodes that output every row of their one child. */
    private static final java.util.Set<String> ROW_PRESERVING = new java.util.HashSet<>(java.util.Arrays.asList(
            "WholeStageCodegenExec", "InputAdapter", "ProjectExec", "SortExec", "ColumnarToRowExec"));

    /**
     * Rows a DataFrame's last execution produced, from its plan's SQL metrics (the first node
     * with {@code numOutputRows} below row-preserving ones), or -1 where the plan does not say.
     * After an eager checkpoint this is the frame's row count without a counting job.
     */
    public long outputRows(Object dataset) {
        SparkPlan node = ((org.apache.spark.sql.classic.Dataset<?>) dataset).queryExecution().executedPlan();
        while (true) {
            if (node instanceof AdaptiveSparkPlanExec) {
                node = ((AdaptiveSparkPlanExec) node).executedPlan();
                continue;
            }
            scala.Option<SQLMetric> rows = node.metrics().get("numOutputRows");
            if (rows.isDefined()) {
                return rows.get().value();
            }
            if (!ROW_PRESERVING.contains(node.getClass().getSimpleName()) || node.children().size() != 1) {
                return -1;
            }
            node = node.children().head();
        }
    }

    /** Forget a job group's statistics (one nobody takes: init, result). */
    public synchronized void drop(String group) {
        groups.remove(group);
        groupJobIds.remove(group);
        groupJobs.remove(group);
    }

    /** An executor that registered before this listener did. */
    public synchronized void seed(String id, int cores) {
        executors.putIfAbsent(id, cores);
    }

    /** Executors alive as {@code id:cores,...}. */
    public synchronized String executors() {
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, Integer> e : executors.entrySet()) {
            b.append(b.length() == 0 ? "" : ",").append(e.getKey()).append(':').append(e.getValue());
        }
        return b.toString();
    }

    /** Executors removed, as a JSON list of {@code [id, reason]} from the {@code from}-th on. */
    public synchronized String removals(int from) {
        return "[" + String.join(",", removed.subList(Math.min(from, removed.size()), removed.size())) + "]";
    }

    /** How many executor removals were seen so far. */
    public synchronized int removalCount() {
        return removed.size();
    }

    /** Memory + disk bytes of the stored blocks of the given RDDs. */
    public synchronized long rddBytes(int[] ids) {
        long total = 0;
        for (int id : ids) {
            Map<String, Long> blocks = rddBlocks.get(id);
            if (blocks != null) {
                for (long v : blocks.values()) {
                    total += v;
                }
            }
        }
        return total;
    }
}
