package eval

import (
	"fmt"
	"strings"

	"github.com/smallinit/smallinit/internal/inputfile"
)

// CMMLU and C-Eval: four-choice exams in Chinese, released as per-subject CSV files. Both are scored the way
// lm-evaluation-harness scores them (lm_eval/tasks/cmmlu/_default_template_yaml and
// lm_eval/tasks/ceval/_default_ceval_yaml, with the per-subject descriptions of their _generate_configs.py):
//
//	context      description + [few-shot examples] + question.strip() + "\nA. " + A + "\nB. " + B + "\nC. " + C +
//	             "\nD. " + D + "\n答案："
//	choices      " A", " B", " C", " D" (doc_to_choice ["A","B","C","D"], the default target_delimiter " ")
//	gold         the index of the answer letter
//	description  CMMLU: "以下是关于{subject}的单项选择题，请直接给出正确答案的选项。\n\n";
//	             C-Eval: "以下是中国关于{subject}的单项选择题，请选出其中的正确答案。\n\n" ({subject} in Chinese)
//	few-shot     the first examples of the same subject's dev split (sampler first_n), each one context without
//	             description + " " + its answer letter, followed by "\n\n" (the default fewshot_delimiter), after
//	             the description
//
// acc_norm divides each choice's log-likelihood by the length of its text: one letter, so it equals acc, in the
// harness as here. The harness's group score (_cmmlu.yaml: aggregate acc weight_by_size) is the accuracy over
// all records, reported here as acc; acc_subject_mean is the unweighted mean over subjects.
//
// Released layouts (read directly: one CSV file or a directory of them):
//
//	CMMLU   {dev,test}/{subject}.csv, header ",Question,A,B,C,D,Answer" (first column a row index); dev has 5
//	        records per subject, the few-shot examples
//	C-Eval  {dev,val,test}/{subject}_{split}.csv, header "id,question,A,B,C,D,answer,explanation"; dev holds 5
//	        examples per subject with explanations (for few-shot), val the scored records (the harness's
//	        ceval-valid), test has no released answers (graded only by submission), so it is refused here
//
// The subject comes from the file name (subjectOf). Answers must be one of the letters A-D. A .jsonl file of the
// same rows as JSON objects (with an optional "subject") is read as well.

// chineseMCColumns are the header columns both layouts need (matched case-insensitively).
var chineseMCColumns = []string{"question", "a", "b", "c", "d", "answer"}

// parseChineseMC reads one CMMLU or C-Eval row.
func parseChineseMC(row csvRow) (doc, error) {
	var f [6]string
	for i, c := range chineseMCColumns {
		v, err := row.get(c)
		if err != nil {
			return doc{}, err
		}
		f[i] = v
	}
	q := strings.TrimSpace(f[0])
	if q == "" {
		return doc{}, fmt.Errorf("empty question")
	}
	ans := strings.TrimSpace(f[5])
	gold := strings.Index("ABCD", ans)
	switch {
	case ans == "":
		return doc{}, fmt.Errorf("empty answer (C-Eval's test split has no released answers: score its val split)")
	case len(ans) != 1 || gold < 0:
		return doc{}, fmt.Errorf("answer %s, want one of A, B, C, D", inputfile.Quote(ans))
	}
	ctx := q + "\nA. " + f[1] + "\nB. " + f[2] + "\nC. " + f[3] + "\nD. " + f[4] + "\n答案："
	return mcDoc(ctx, []string{"A", "B", "C", "D"}, gold), nil
}

// cmmluDescription is the harness's CMMLU description of a subject; a subject not in cmmluSubjects is named
// as it is.
func cmmluDescription(subject string) string {
	return "以下是关于" + subjectName(cmmluSubjects, subject) + "的单项选择题，请直接给出正确答案的选项。\n\n"
}

// cevalDescription is the harness's C-Eval description of a subject.
func cevalDescription(subject string) string {
	return "以下是中国关于" + subjectName(cevalSubjects, subject) + "的单项选择题，请选出其中的正确答案。\n\n"
}

func subjectName(names map[string]string, subject string) string {
	if zh, ok := names[subject]; ok {
		return zh
	}
	return subject
}

// cmmluSubjects are CMMLU's 67 subjects, file name -> Chinese name (lm_eval/tasks/cmmlu/_generate_configs.py).
var cmmluSubjects = map[string]string{
	"agronomy": "农学", "anatomy": "解剖学", "ancient_chinese": "古汉语", "arts": "艺术学", "astronomy": "天文学",
	"business_ethics": "商业伦理", "chinese_civil_service_exam": "中国公务员考试", "chinese_driving_rule": "中国驾驶规则",
	"chinese_food_culture": "中国饮食文化", "chinese_foreign_policy": "中国外交政策", "chinese_history": "中国历史",
	"chinese_literature": "中国文学", "chinese_teacher_qualification": "中国教师资格", "clinical_knowledge": "临床知识",
	"college_actuarial_science": "大学精算学", "college_education": "大学教育学",
	"college_engineering_hydrology": "大学工程水文学", "college_law": "大学法律", "college_mathematics": "大学数学",
	"college_medical_statistics": "大学医学统计", "college_medicine": "大学医学", "computer_science": "计算机科学",
	"computer_security": "计算机安全", "conceptual_physics": "概念物理学", "construction_project_management": "建设工程管理",
	"economics": "经济学", "education": "教育学", "electrical_engineering": "电气工程", "elementary_chinese": "小学语文",
	"elementary_commonsense": "小学常识", "elementary_information_and_technology": "小学信息技术",
	"elementary_mathematics": "初等数学", "ethnology": "民族学", "food_science": "食品科学", "genetics": "遗传学",
	"global_facts": "全球事实", "high_school_biology": "高中生物", "high_school_chemistry": "高中化学",
	"high_school_geography": "高中地理", "high_school_mathematics": "高中数学", "high_school_physics": "高中物理学",
	"high_school_politics": "高中政治", "human_sexuality": "人类性行为", "international_law": "国际法学",
	"journalism": "新闻学", "jurisprudence": "法理学", "legal_and_moral_basis": "法律与道德基础", "logical": "逻辑学",
	"machine_learning": "机器学习", "management": "管理学", "marketing": "市场营销", "marxist_theory": "马克思主义理论",
	"modern_chinese": "现代汉语", "nutrition": "营养学", "philosophy": "哲学", "professional_accounting": "专业会计",
	"professional_law": "专业法学", "professional_medicine": "专业医学", "professional_psychology": "专业心理学",
	"public_relations": "公共关系", "security_study": "安全研究", "sociology": "社会学", "sports_science": "体育学",
	"traditional_chinese_medicine": "中医中药", "virology": "病毒学", "world_history": "世界历史",
	"world_religions": "世界宗教",
}

// cevalSubjects are C-Eval's 52 subjects, file name -> Chinese name (lm_eval/tasks/ceval/_generate_configs.py).
var cevalSubjects = map[string]string{
	"computer_network": "计算机网络", "operating_system": "操作系统", "computer_architecture": "计算机组成",
	"college_programming": "大学编程", "college_physics": "大学物理", "college_chemistry": "大学化学",
	"advanced_mathematics": "高等数学", "probability_and_statistics": "概率统计", "discrete_mathematics": "离散数学",
	"electrical_engineer": "注册电气工程师", "metrology_engineer": "注册计量师", "high_school_mathematics": "高中数学",
	"high_school_physics": "高中物理", "high_school_chemistry": "高中化学", "high_school_biology": "高中生物",
	"middle_school_mathematics": "初中数学", "middle_school_biology": "初中生物", "middle_school_physics": "初中物理",
	"middle_school_chemistry": "初中化学", "veterinary_medicine": "兽医学", "college_economics": "大学经济学",
	"business_administration": "工商管理", "marxism": "马克思主义基本原理",
	"mao_zedong_thought": "毛泽东思想和中国特色社会主义理论体系概论", "education_science": "教育学",
	"teacher_qualification": "教师资格", "high_school_politics": "高中政治", "high_school_geography": "高中地理",
	"middle_school_politics": "初中政治", "middle_school_geography": "初中地理", "modern_chinese_history": "近代史纲要",
	"ideological_and_moral_cultivation": "思想道德修养与法律基础", "logic": "逻辑学", "law": "法学",
	"chinese_language_and_literature": "中国语言文学", "art_studies": "艺术学", "professional_tour_guide": "导游资格",
	"legal_professional": "法律职业资格", "high_school_chinese": "高中语文", "high_school_history": "高中历史",
	"middle_school_history": "初中历史", "civil_servant": "公务员", "sports_science": "体育学",
	"plant_protection": "植物保护", "basic_medicine": "基础医学", "clinical_medicine": "临床医学",
	"urban_and_rural_planner": "注册城乡规划师", "accountant": "注册会计师", "fire_engineer": "注册消防工程师",
	"environmental_impact_assessment_engineer": "环境影响评价工程师", "tax_accountant": "税务师", "physician": "医师资格",
}
